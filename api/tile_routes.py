"""The log as C2SP tlog-tiles (https://c2sp.org/tlog-tiles): a checkpoint and static-looking
tiles any tile client (Go's sumdb/tlog, Tessera's) reads without knowing tenure's JSON routes.

A full tile never changes (the tree is append-only), so it is cached for a year as
``immutable``; a partial tile and the checkpoint are replaced as the tree grows, so caches keep
them only briefly. Paths are parsed by ``ledger.log.tiles``: a malformed one is a 400, a tile the
tree has not grown to a 404, both in tenure's error shape. The spec, not /openapi.json, describes
these routes (their answers are not JSON), so they stay out of the document.
"""

from __future__ import annotations

import base64
from typing import Annotated

from fastapi import FastAPI, Path, Request
from fastapi.responses import Response

from api.log_routes import LIMITED, out_of_range
from api.refusals import MAX_SAFE_INTEGER, InputError
from api.requests import edge_of
from api.witness_push import served_checkpoint
from ledger.log.tiles import BadTilePath, NoSuchTile, parse_tile_path
from ledger.log.view import OutOfRange
from verify.tlog_proof import format_proof

Index = Annotated[int, Path(ge=0, le=MAX_SAFE_INTEGER)]

FULL_TILE_CACHE = "public, max-age=31536000, immutable"
PARTIAL_TILE_CACHE = "public, max-age=5"
CHECKPOINT_CACHE = "no-cache"
NOTE_TYPE = "text/plain; charset=utf-8"
TILE_TYPE = "application/octet-stream"


def tile_routes(app: FastAPI) -> None:
    @app.get("/checkpoint", dependencies=LIMITED, include_in_schema=False)
    async def checkpoint(request: Request) -> Response:
        """The latest signed checkpoint as the C2SP signed note itself (tlog-tiles)."""
        signed = await served_checkpoint(request)
        headers = {"Cache-Control": CHECKPOINT_CACHE}
        return Response(signed.note.encode(), 200, headers, media_type=NOTE_TYPE)

    @app.get("/tile/{path:path}", dependencies=LIMITED, include_in_schema=False)
    async def tile(request: Request, path: str) -> Response:
        """A hash tile `<L>/<N>[.p/<W>]` or an entry bundle `entries/<N>[.p/<W>]` (tlog-tiles)."""
        try:
            wanted = parse_tile_path(path)
        except BadTilePath as error:
            raise InputError("invalid_tile_path", str(error), "path", status=400) from error
        log = edge_of(request).log
        try:
            data = log.tile(wanted)
        except NoSuchTile as error:
            raise InputError("not_found", str(error), "path", status=404) from error
        cache = FULL_TILE_CACHE if wanted.full else PARTIAL_TILE_CACHE
        return Response(data, 200, {"Cache-Control": cache}, media_type=TILE_TYPE)

    @app.get("/api/v1/log/tlog-proof/{index}", dependencies=LIMITED, include_in_schema=False)
    async def tlog_proof(request: Request, index: Index) -> Response:
        """Entry `index` as a C2SP tlog-proof: the entry in `extra`, its audit path and the
        latest signed checkpoint."""
        signed = await edge_of(request).core.checkpoint_covering()
        log = edge_of(request).log
        try:
            proof = log.inclusion(index, signed.tree_size)
        except OutOfRange as error:
            raise out_of_range(error) from error
        entry = log.entry(index)
        if entry is None:  # the durable tree covers it, so this is a storage fault
            raise RuntimeError(f"entry {index} is inside the tree but not stored")
        hashes = [base64.b64decode(h) for h in proof["hashes"]]
        text = format_proof(index, hashes, signed.note, entry)
        return Response(text.encode(), 200, media_type=NOTE_TYPE)
