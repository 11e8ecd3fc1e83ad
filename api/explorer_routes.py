"""`/explorer`: a read-only ledger explorer page, self-contained (no CDN, works offline).

The HTML, JavaScript and CSS ship in the package (``api/explorer/``) and are served with their
content types and a Content-Security-Policy that lets the page load only its own script and
style and talk only to this server: no inline code, no third-party origin, no framing.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import Response

from api.schemas import InputError

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "explorer.js": "text/javascript; charset=utf-8",
    "explorer.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def asset(name: str) -> Response:
    """One packaged file with its content type and the page's security headers."""
    media = ASSETS.get(name)
    if media is None:
        raise InputError("not_found", f"no explorer asset {name!r}", "name", status=404)
    body = (files("api") / "explorer" / name).read_bytes()
    return Response(body, 200, HEADERS, media_type=media)


def explorer_routes(app: FastAPI) -> None:
    @app.get("/explorer", include_in_schema=False)
    async def page() -> Response:
        """The ledger explorer page."""
        return asset("index.html")

    @app.get("/explorer/{name}", include_in_schema=False)
    async def explorer_asset(name: str) -> Response:
        """The explorer's script and style sheet."""
        return asset(name)
