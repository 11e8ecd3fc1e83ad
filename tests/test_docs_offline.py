"""`/docs` renders with no network but this server's: Swagger UI from the package, in a real
headless Chromium (the explorer test's browser), every other origin blocked and recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Server
from tests.test_explorer import browser

__all__ = ["browser"]


@pytest.fixture
def offline_page(browser: Any, server: Server) -> Iterator[tuple[Any, list[str]]]:
    context = browser.new_context()
    elsewhere: list[str] = []

    def only_this_server(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", only_this_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page, elsewhere
    context.close()


def test_docs_render_offline(offline_page: tuple[Any, list[str]], server: Server) -> None:
    page, elsewhere = offline_page
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url + "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "tenure" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector(".opblock")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/lease/" in path for path in paths), paths
    assert elsewhere == [] and errors == []


def test_docs_assets_are_packaged_and_redoc_is_gone(server: Server) -> None:
    with httpx.Client(base_url=server.url) as client:
        html = client.get("/docs").text
        assert "cdn." not in html and "/docs/assets/swagger-ui-bundle.js" in html
        js = client.get("/docs/assets/swagger-ui-bundle.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert client.get("/docs/assets/nope.js").status_code == 404
        assert client.get("/redoc").status_code == 404
