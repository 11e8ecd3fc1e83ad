"""The route of DESIGN §3.4 that hands out offline receipt bundles (§6, docs/bundle-format.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import Response

from api.log_routes import LIMITED
from api.requests import edge_of, parse_json, read_body
from api.responses import raw, suite_of
from api.schemas import InputError
from api.settings import Settings
from api.witness_push import served_checkpoint
from ledger.lease.bundle import NotAReceipt, build_bundle, saved_receipt
from ledger.lease.provenance import canonical_request
from ledger.log.text import iso
from verify.dataintegrity import JCS_SUITE

TreeSize = Annotated[int | None, Query(alias="treeSize", ge=1)]


def bundle_routes(app: FastAPI, settings: Settings) -> None:
    @app.get("/api/v1/log/bundle/{index}", dependencies=LIMITED)
    async def bundle(
        request: Request, index: Annotated[int, Path(ge=0)], tree_size: TreeSize = None
    ) -> Response:
        """An offline receipt bundle for entry `index`; `treeSize` picks an earlier checkpoint."""
        suite = suite_of(request)
        latest = await served_checkpoint(request)
        issuer = edge_of(request).issuer
        canonical = canonical_request(request.method, request.url.path, None)
        at = iso(edge_of(request).core.signing_clock())
        log = edge_of(request).log
        return raw(build_bundle(log, issuer, index, latest, tree_size, canonical, at, suite))

    @app.post("/api/v1/log/bundle", dependencies=LIMITED)
    async def own_bundle(request: Request, tree_size: TreeSize = None) -> Response:
        """A bundle proving a saved response's own ledger entry (its `data.ledger.logIndex`)."""
        document = parse_json(await read_body(request, settings.verify_body_max_bytes))
        try:
            receipt, index = saved_receipt(document)
        except NotAReceipt as error:
            raise InputError("invalid_value", str(error), error.field) from error
        latest = await served_checkpoint(request)
        edge = edge_of(request)
        log, issuer = edge.log, edge.issuer
        return raw(build_bundle(log, issuer, index, latest, tree_size, b"", "", JCS_SUITE, receipt))
