"""Routes of DESIGN §3.4: the log, its proofs, checkpoints and keys."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import Response

from api.refusals import MAX_SAFE_INTEGER
from api.requests import edge_of, limit_client
from api.responses import raw
from api.schemas import InputError
from api.witness_push import served_checkpoint
from ledger.log.view import LogReader, OutOfRange
from verify.jsonld import bundled_contexts
from verify.receipt import CONTEXTS, VC_CONTEXT

NonNegative = Annotated[int, Query(ge=0, le=MAX_SAFE_INTEGER)]
"""An index or size: beyond I-JSON's integers no tree reaches, and no backend stores it."""
Positive = Annotated[int, Query(ge=1, le=MAX_SAFE_INTEGER)]
PageSize = Annotated[int, Query(ge=1, le=100)]
LIMITED = [Depends(limit_client)]  # no tenant here: rate-limited per client address


def _log(request: Request) -> LogReader:
    log = edge_of(request).log
    return log


def out_of_range(error: OutOfRange) -> InputError:
    return InputError("out_of_range", str(error), error.field, status=400)


async def refuse_out_of_range(request: Request, error: Exception) -> Response:
    """A read outside the tree, from any log route, answers as the refusal naming the parameter
    (the app's own InputError handler writes it)."""
    if not isinstance(error, OutOfRange):
        raise error
    answer: Response = await request.app.exception_handlers[InputError](
        request, out_of_range(error)
    )
    return answer


def log_routes(app: FastAPI) -> None:
    app.add_exception_handler(OutOfRange, refuse_out_of_range)

    @app.get("/api/v1/log/checkpoint", dependencies=LIMITED)
    async def checkpoint(request: Request) -> Response:
        """The latest signed checkpoint (C2SP tlog-checkpoint in a signed note), sealed at most
        once a second for readers."""
        signed = await served_checkpoint(request)
        return raw(signed.as_data())

    @app.get("/api/v1/log/checkpoints", dependencies=LIMITED)
    async def checkpoints(
        request: Request, start: NonNegative = 0, limit: PageSize = 100
    ) -> Response:
        """Stored signed checkpoints of tree size ≥ `start`, smallest first, `limit` ≤ 100 a
        page; `next` is the `start` of the following page (null at the end)."""
        return raw(_log(request).checkpoints(start, limit))

    @app.get("/api/v1/log/entries", dependencies=LIMITED)
    async def entries(
        request: Request, start: NonNegative = 0, end: NonNegative | None = None
    ) -> Response:
        """Entries [start, end) as exact leaf bytes (base64) and parsed JSON: at most 1000, `end`
        clamped to the tree size (default `start` + 1000)."""
        return raw({"start": start, "entries": _log(request).entries(start, end)})

    @app.get("/api/v1/log/proof/inclusion", dependencies=LIMITED)
    async def inclusion(
        request: Request,
        index: NonNegative,
        tree_size: Annotated[int, Query(alias="treeSize", ge=1, le=MAX_SAFE_INTEGER)],
    ) -> Response:
        """RFC 9162 inclusion proof (audit path) of entry `index` in the tree of `treeSize`."""
        return raw(_log(request).inclusion(index, tree_size))

    @app.get("/api/v1/log/proof/consistency", dependencies=LIMITED)
    async def consistency(request: Request, first: Positive, second: Positive) -> Response:
        """RFC 9162 consistency proof between the trees of sizes `first` and `second`."""
        return raw(_log(request).consistency(first, second))

    @app.get("/api/v1/keys", dependencies=LIMITED)
    async def keys(request: Request) -> Response:
        """Every signing key ever used, with its did:key, multikey and validity period."""
        return raw({"keys": _log(request).keys()})

    @app.get("/api/v1/contexts", dependencies=LIMITED)
    async def contexts(request: Request) -> Response:
        """Every JSON-LD context the credentials use beyond the VC 2.0 base context."""
        bundled = bundled_contexts()
        published = {iri: bundled[iri] for iri in CONTEXTS if iri != VC_CONTEXT}
        return raw(published)
