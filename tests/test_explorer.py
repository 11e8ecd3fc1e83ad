"""The ledger explorer at /explorer, in a real headless Chromium (Debian's `chromium`, driven by
playwright with the system browser; nothing is downloaded). If the browser cannot be found or
started, the test fails and says why: it is never skipped."""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, lease, rid

CHROMIUM = "/usr/bin/chromium"
ELSEWHERE = re.compile(r"""(src|href)\s*=\s*["']?(https?:)?//|@import|url\(|fetch\(["'`]https?:""")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DROPPED = """text => {
  const dropped = new DataTransfer();
  dropped.items.add(new File([text], "receipt.json", {type: "application/json"}));
  return dropped;
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError as e:
        pytest.fail(f"playwright is not installed (the `test` extra): {e}")
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (scripts/test.sh does)")
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    except Error as e:
        playwright.stop()
        pytest.fail(f"{CHROMIUM} did not start: {e}")
    yield chromium
    chromium.close()
    playwright.stop()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.problems = problems
    yield page
    context.close()


def receipt(server: Server) -> dict[str, Any]:
    """A real saved response: a lease grant with its credential."""
    with server.client() as client:
        answer = lease(client, "acquire", resource=rid(), holder="explorer", ttlSeconds=30)
        assert answer.status_code == 201
        return dict(answer.json())


def test_explorer_serves_its_assets_with_a_strict_policy(server: Server) -> None:
    for path, media in [
        ("/explorer", "text/html"),
        ("/explorer/explorer.js", "text/javascript"),
        ("/explorer/explorer.css", "text/css"),
    ]:
        answer = httpx.get(server.url + path)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(media)
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert not ELSEWHERE.search(answer.text)  # nothing is loaded from another origin
    assert httpx.get(server.url + "/explorer/../app.py").status_code == 404
    assert httpx.get(server.url + "/explorer/nope.js").status_code == 404


def test_explorer_in_chromium(page: Any, server: Server, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    saved = [receipt(server) for _ in range(3)][1]  # a proof with hashes on both sides
    size = httpx.get(server.url + "/api/v1/log/checkpoint").json()["treeSize"]
    page.goto(server.url + "/explorer")
    expect(page.locator("#cp-size")).to_have_text(str(size))
    signature = page.locator("#cp-signature")
    expect(signature).not_to_have_attribute("data-status", "pending")
    has_ed25519 = "crypto.subtle.generateKey({name: 'Ed25519'}, false, ['sign'])"
    ed25519 = page.evaluate(has_ed25519 + ".then(() => true, () => false)")
    assert signature.get_attribute("data-status") == ("verified" if ed25519 else "unsupported")

    index = saved["data"]["ledger"]["logIndex"]
    page.click("#page-last")
    row = page.locator(f"#entries tr[data-index='{index}']")
    row.locator("button.prove").click()
    expect(page.locator("#proof")).to_have_attribute("data-status", "pass")
    assert f"entry {index} is included" in page.locator("#proof").text_content()

    # The same check fails when the server's proof is altered on the way.
    def altered(route: Any) -> None:
        proof = route.fetch().json()
        proof["hashes"][0] = "A" * 43 + "="
        route.fulfill(json=proof)

    page.route("**/log/proof/inclusion*", altered)
    row.locator("button.prove").click()
    expect(page.locator("#proof")).to_have_attribute("data-status", "fail")
    page.unroute("**/log/proof/inclusion*")

    drop = page.evaluate_handle(DROPPED, json.dumps(saved))  # a file dropped on the zone
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": drop})
    expect(page.locator("#report")).to_have_attribute("data-status", "pass")
    assert page.locator("#report li.bad").count() == 0
    assert page.locator("#report li.ok").count() >= 3

    bundle = tmp_path / "bundle.json"  # a bundle, through the file picker
    bundle.write_bytes(httpx.get(f"{server.url}/api/v1/log/bundle/{index}").content)
    page.set_input_files("#file-input", str(bundle))
    expect(page.locator("#report li[data-check='inclusion']")).to_have_class("ok")
    expect(page.locator("#report")).to_have_attribute("data-status", "pass")

    tampered = copy.deepcopy(saved)
    tampered["data"]["fencingToken"] += 1
    page.fill("#paste", json.dumps(tampered))
    page.click("#verify-button")
    expect(page.locator("#report")).to_have_attribute("data-status", "fail")
    assert page.locator("#report li.bad").count() >= 1
    assert page.problems == []
