"""`/docs`: Swagger UI served from the package (``api/swagger/``, swagger-ui-dist 5, Apache-2.0),
so the API reference renders on an air-gapped host; FastAPI's default page loads it from a CDN.
ReDoc, which has no packaged copy here, is not offered."""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from api.schemas import InputError

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
PREFIX = "/docs/assets/"


def docs_routes(app: FastAPI) -> None:
    """Add ``/docs`` and its assets; create the app with ``docs_url=None, redoc_url=None``."""

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """Swagger UI over /openapi.json, with every asset from this server."""
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=PREFIX + "swagger-ui-bundle.js",
            swagger_css_url=PREFIX + "swagger-ui.css",
            swagger_favicon_url=PREFIX + "favicon-32x32.png",
        )

    @app.get(PREFIX + "{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        """One packaged Swagger UI file."""
        media = ASSETS.get(name)
        if media is None:
            raise InputError("not_found", f"no docs asset {name!r}", "name", status=404)
        body = (files("api") / "swagger" / name).read_bytes()
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(body, 200, headers, media_type=media)
