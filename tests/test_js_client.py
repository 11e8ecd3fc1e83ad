"""The TypeScript client (clients/js): its own tests against this server (``npm test``), the
example of docs/client.md §4, and its receipt check agreeing with the Python verifier's —
on live answers and on the same answers tampered with."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, lease, rid
from verify import ijson
from verify.errors import MalformedInput, VerificationError
from verify.fence import FenceRefused, verify_fence
from verify.receipt import ReceiptError, check_receipt
from verify.trust import keyring_periods

JS = ROOT / "clients" / "js"
AGREE = JS / "dist" / "test" / "agree.js"
pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or not (JS / "node_modules" / "typescript").is_dir(),
    reason="needs node/npm and `cd clients/js && npm ci` (scripts/test.sh runs it)",
)
Doc = dict[str, Any]


def _node(args: list[str], server: Server, stdin: str = "", cwd: Path = JS) -> str:
    env = {**os.environ, "TENURE_URL": server.url}
    done = subprocess.run(
        args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_npm_test_passes_against_the_live_server(server: Server) -> None:
    out = _node(["npm", "test", "--silent"], server)
    assert re.search(r"^# fail 0$", out, re.M) and re.search(r"^# pass [1-9]", out, re.M), out


def test_the_docs_example_runs(server: Server, tmp_path: Path) -> None:
    text = (ROOT / "docs" / "client.md").read_text()
    section = text[text.index("## 4. The TypeScript client") :]
    example = section[section.index("```js\n") + 6 : section.index("```\n", section.index("```js"))]
    index = (JS / "dist" / "src" / "index.js").as_uri()
    script = tmp_path / "example.mjs"
    script.write_text(example.replace('"@tenure/client"', json.dumps(index)))
    _node(["npm", "run", "--silent", "build"], server)
    out = _node(["node", str(script)], server, cwd=tmp_path)
    assert re.search(r"wrote with fencing token \d+", out), out


def _tampered(receipt: Doc, other: Doc) -> list[Callable[[Doc], None]]:
    """Ways to alter a saved grant: each must be refused by both verifiers alike."""

    def at(path: str, value: Any) -> Callable[[Doc], None]:
        def change(doc: Doc) -> None:
            *parents, last = path.split(".")
            for name in parents:
                doc = doc[name]
            doc[last] = value

        return change

    token = receipt["data"]["fencingToken"]
    subject = "_provenance.credentialSubject"
    return [
        at("data.holder", "w2"),
        at("data.fencingToken", token + 1),
        at(f"{subject}.fencingToken", token + 1),
        at(f"{subject}.resource", other["data"]["resource"]),
        at("_provenance.proof.proofValue", other["_provenance"]["proof"]["proofValue"]),
        at("_provenance.proof.cryptosuite", "eddsa-rdfc-2022"),
        at("_provenance.validFrom", "2020-01-01T00:00:00Z"),
        at("_provenance.issuer", other["_provenance"]["issuer"] + "x"),
        at("_provenance.@context", ["https://www.w3.org/ns/credentials/v2"]),
        at(f"{subject}.extra", 1),
        at(f"{subject}.manifest.alg", "sha512"),
        at(
            f"{subject}.manifest.assertions",
            other["_provenance"]["credentialSubject"]["manifest"]["assertions"][:2],
        ),
        at("data", None),
        lambda doc: doc["_provenance"].pop("proof"),
    ]


def _texts(receipt: Doc) -> list[str]:
    """The receipt as JSON text: as sent, with a planted first key, ``1.0``, an unsafe integer."""
    text = json.dumps(receipt, separators=(",", ":"))
    token = f'"fencingToken":{receipt["data"]["fencingToken"]},'
    assert token in text
    return [
        text,
        text.replace('{"data":{', '{"data":{"fencingToken":999,', 1),
        text.replace(token, token.replace(",", ".0,"), 1),
        text.replace(token, '"fencingToken":9007199254740993,', 1),
    ]


def _python_verdicts(case: Doc) -> Doc:
    trust = case["trust"]
    trusted = (
        keyring_periods(trust["keys"])
        if isinstance(trust, dict)
        else {trust}
        if isinstance(trust, str)
        else set(trust)
    )
    verdict: Doc = {}
    receipt = case["receipt"]
    try:
        check_receipt(ijson.loads(receipt) if isinstance(receipt, str) else receipt, trusted)
        verdict["receipt"] = "ok"
    except ReceiptError as error:
        verdict["receipt"] = error.check
    except MalformedInput:
        verdict["receipt"] = "format"
    try:
        verify_fence(
            case["receipt"], trust=trust, resource=case["resource"], min_token=case["minToken"]
        )
        verdict["fence"] = "ok"
    except FenceRefused as error:
        verdict["fence"] = error.reason
    except VerificationError as error:  # pragma: no cover - a case the JS side must match
        verdict["fence"] = f"error {error}"
    return verdict


def _cases(api: httpx.Client) -> list[Doc]:
    keys, resource = api.get("/api/v1/keys").json(), rid()
    did = keys["keys"][0]["did"]
    first = lease(api, "acquire", resource=resource, holder="w1", ttlSeconds=30).json()
    owner = first["data"]["ownerToken"]
    renewed = lease(api, "renew", resource=resource, ownerToken=owner, ttlSeconds=30).json()
    held = lease(api, "acquire", resource=resource, holder="w2").json()
    seen = lease(api, "get", resource=resource).json()
    released = lease(api, "release", resource=resource, ownerToken=owner).json()
    bad = lease(api, "acquire", resource="x", holder="w1").json()
    other = lease(api, "acquire", resource=rid(), holder="w3").json()
    token = first["data"]["fencingToken"]
    plain = {"trust": did, "resource": resource, "minToken": token}
    retired = copy.deepcopy(keys)
    retired["keys"][0]["validUntil"] = retired["keys"][0]["validFrom"]
    cases = [{**plain, "receipt": doc} for doc in (first, renewed, held, seen, released, bad)]
    cases += [
        {**plain, "receipt": first["_provenance"]},
        {**plain, "receipt": first, "trust": keys},
    ]
    cases += [
        {**plain, "receipt": first, "trust": retired},
        {**plain, "receipt": first, "minToken": token + 1},
    ]
    cases += [
        {**plain, "receipt": first, "resource": rid()},
        {**plain, "receipt": first, "trust": [other["_provenance"]["issuer"][:-1] + "x"]},
    ]
    cases += [{**plain, "receipt": text} for text in _texts(first)]
    for tamper in _tampered(first, other):
        doc = copy.deepcopy(first)
        tamper(doc)
        cases.append({**plain, "receipt": doc})
    return cases


def test_js_and_python_agree_on_live_and_tampered_receipts(
    server: Server, api: httpx.Client
) -> None:
    cases = _cases(api)
    _node(["npm", "run", "--silent", "build"], server)
    js = json.loads(_node(["node", str(AGREE)], server, stdin=json.dumps(cases)))
    python = [_python_verdicts(case) for case in cases]
    assert js == python
    fences = [verdict["fence"] for verdict in python]
    assert fences[:2] == ["ok", "ok"] and fences[6:8] == [
        "ok",
        "ok",
    ]  # grant, renewal, bare, keyring
    assert {
        "grant",
        "issuer",
        "token",
        "resource",
        "proof",
        "format",
        "manifest:tenure.data",
    } <= set(fences)
    assert fences[12:16] == ["ok", "format", "format", "format"]  # text: sent, planted, 1.0, 2^53+2
    tampered = python[-len(_tampered(cases[0]["receipt"], cases[0]["receipt"])) :]
    assert all(verdict["receipt"] != "ok" for verdict in tampered), tampered
