"""The per-op request bodies of the OpenAPI document and the documents one may ask to verify.

``ledger.lease.ops.check_call``'s per-op rules are JSON Schema too: renew, release and complete
need an ``ownerToken``; only acquire and wait take a
``waitSeconds`` (null is "not given"), and only complete a ``result`` (required there, refused
anywhere else, null included). So each op gets its own body, and ``/api/v1/lease/{op}`` is
described as its six concrete paths.
"""

from __future__ import annotations

import copy
from typing import Any

from ledger.lease.ops import ACQUIRING, OWNED, Op

NAMESPACE_PATTERN = "^ns_[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$"
"""What ``POST /api/v1/namespaces`` mints: 256 bits in 43 base64url characters, the last
character's two spare bits zero (api/names.py)."""
ANONYMOUS_PATTERN = "^.{0,178}[A-Za-z0-9_-]{22}$"
"""The shape an anonymous tenant's resource or scope must have (docs/api.md "Anonymous names"):
at most 200 characters ending in ≥ 22 base64url characters. Necessary, not sufficient: the
randomness tests of api/names.py are not a regular language."""
ANONYMOUS_NOTE = (
    "In the anonymous tenant (no API key, no namespace) it must match `x-anonymousPattern` and "
    "carry ≥ 128 random bits (docs/api.md, Anonymous names), else 422 low_entropy"
)
NAMESPACE_HEADER = {
    "name": "Tenure-Namespace",
    "in": "header",
    "required": False,
    "description": "A namespace from POST /api/v1/namespaces (the only way on GET); not "
    "together with an API key",
    "schema": {"type": "string", "pattern": NAMESPACE_PATTERN},
}


def op_body(lease: dict[str, Any], op: Op) -> dict[str, Any]:
    """``lease`` (LeaseBody's schema) narrowed to what ``op`` accepts."""
    body = copy.deepcopy(lease)
    props: dict[str, Any] = body["properties"]
    props["op"] = {"type": "string", "const": op.value}
    required = ["resource"]
    if op in OWNED:
        props["ownerToken"] = _not_null(props["ownerToken"])
        required.append("ownerToken")
    if op not in ACQUIRING:
        props["waitSeconds"] = {"type": "null"}
    if op is Op.COMPLETE:
        required.append("result")
    else:
        del props["result"]
    body["required"] = required
    body["description"] = f"`{op.value}` (DESIGN §3.2)"
    return body


def with_name_rules(body: dict[str, Any]) -> dict[str, Any]:
    """The namespace's exact format, and the anonymous rule stated by ``resource`` and
    ``scope`` (as an extension: a ``pattern`` would refuse a named tenant's `deploy:prod`)."""
    props = body["properties"]
    if "namespace" in props:
        props["namespace"] = _nullable({"type": "string", "pattern": NAMESPACE_PATTERN})
    for name in ("resource", "scope"):
        if name in props:
            props[name]["description"] = ANONYMOUS_NOTE
            props[name]["x-anonymousPattern"] = ANONYMOUS_PATTERN
    return body


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    choices = [c for c in prop.get("anyOf", [prop]) if c.get("type") != "null"]
    return copy.deepcopy(choices[0])


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}], "default": None}


SAVED_RESPONSE = {
    "type": "object",
    "description": "A response saved as it came: `{data, _provenance}`",
    "required": ["data", "_provenance"],
    "properties": {
        "data": {"type": "object"},
        "_provenance": {"$ref": "#/components/schemas/Credential"},
    },
}
BUNDLE = {
    "type": "object",
    "description": "An offline receipt bundle (docs/bundle-format.md)",
    "required": ["type", "receipt", "entry", "inclusion", "checkpoint", "keys"],
    "properties": {
        "type": {"type": "string", "const": "tenure-receipt-bundle/v1"},
        "receipt": {"$ref": "#/components/schemas/SavedResponse"},
        "entry": {"type": "string", "description": "the entry's exact bytes, base64"},
        "inclusion": {"type": "object"},
        "checkpoint": {"type": "object"},
        "keys": {"type": "array", "items": {"type": "object"}},
        "consistency": {"type": "object"},
    },
}
VERIFIABLE = {
    "description": "A saved response, a bare credential or a bundle. Any other JSON is "
    "answered too, 200 with `status: fail` naming the check that failed: verifying is free",
    "anyOf": [
        {"$ref": "#/components/schemas/SavedResponse"},
        {"$ref": "#/components/schemas/Credential"},
        {"$ref": "#/components/schemas/Bundle"},
        {"description": "anything else (it fails verification)"},
    ],
}
DOCUMENTS = {"SavedResponse": SAVED_RESPONSE, "Bundle": BUNDLE, "Verifiable": VERIFIABLE}
