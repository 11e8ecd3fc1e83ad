"""The schemas of the OpenAPI document (api/openapi.py): the answers as DESIGN §3.3 and §3.4
state them, and the request bodies from the pydantic models of api/schemas.py."""

from __future__ import annotations

from typing import Any

from api.openapi_ops import DOCUMENTS, op_body, with_name_rules
from api.schemas import HeartbeatBody, LeaseBody, NamespaceBody, ScopeBody
from ledger.lease.leases import Outcome
from ledger.lease.ops import Op
from verify.dataintegrity import SUITES
from verify.defaults import DEAD_CEILING_SECONDS


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_STRING = {"type": "string"}
_INT = {"type": "integer"}
_B64 = {"type": "string", "description": "standard base64"}
_ISO = {"type": "string", "description": "ISO 8601 UTC"}
_HOLDER_VIEW = {
    "type": "object",
    "required": ["holder", "fencingToken", "expiresAt"],
    "properties": {"holder": _STRING, "fencingToken": _INT, "expiresAt": _ISO},
}

ERROR = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {
            "type": "string",
            "description": "missing, unknown_field, wrong_type, out_of_range, invalid_value, "
            "malformed_json, duplicate_key, too_deep, low_entropy, ambiguous_tenant, too_large, "
            "unsupported_media_type, unauthorized, rate_limited, busy, not_found, "
            "method_not_allowed, storage_unavailable, internal",
        },
        "message": {"type": "string", "description": "the rule, in tenure's words"},
        "field": {"type": "string", "description": "the field, parameter or header refused"},
    },
}

ANSWER_DATA = {
    "type": "object",
    "required": ["status"],
    "description": "DESIGN §3.3; which members appear depends on the operation and outcome",
    "properties": {
        "status": {"type": "string", "enum": ["pass", "fail", "unknown", "unsupported"]},
        "op": {"type": "string"},
        "outcome": {"type": "string", "enum": [o.value for o in Outcome] + ["INCLUDED"]},
        "granted": {"type": "boolean"},
        "resource": _STRING,
        "holder": _STRING,
        "fencingToken": _INT,
        "ownerToken": {"type": "string", "description": "only in a fresh grant (201)"},
        "expiresAt": _ISO,
        "absoluteExpiresAt": _ISO,
        "ttlSeconds": _INT,
        "leaseId": _INT,
        "capacity": _INT,
        "holders": {"type": "array", "items": _HOLDER_VIEW},
        "heldBy": {"type": "array", "items": _STRING},
        "sameHolderLabel": {"type": "boolean"},
        "retryAfterSeconds": _INT,
        "backoff": {"type": "object"},
        "completedAt": _ISO,
        "scope": _STRING,
        "releasedIds": {"type": "array", "items": _INT},
        "replayed": {"type": "boolean"},
        "leaseLive": {"type": "boolean", "description": "a replayed grant: is it still live?"},
        "firstOutcome": {"type": "string", "description": "a replay answering LOST: the first"},
        "ownerTokenWithheld": {"type": "string", "description": "why a replay has no token"},
        "witnesses": {"type": "array", "items": {"type": "object"}},
        "versions": {"type": "object"},
        "limits": {"type": "object"},
        "deterministic": {"type": "boolean"},
        "ledger": {"type": "object", "required": ["treeSize", "rootHash"]},
        "namespace": {"type": "string", "description": "POST /api/v1/namespaces only"},
        "entropyBits": _INT,
        "error": ERROR,
    },
}

CREDENTIAL = {
    "type": "object",
    "required": ["@context", "type", "issuer", "credentialSubject", "proof"],
    "description": "An Ed25519-signed W3C Verifiable Credential over the answer (DESIGN §5)",
}

COMPONENTS: dict[str, Any] = {
    "securitySchemes": {
        "apiKey": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `tenure apikey create NAME` (tnr_…)",
        },
    },
    "headers": {
        "RetryAfter": {
            "description": "Seconds before trying again",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    },
    "schemas": {
        "Error": ERROR,
        "AnswerData": ANSWER_DATA,
        "Credential": CREDENTIAL,
        "Answer": {
            "type": "object",
            "required": ["data", "_provenance"],
            "properties": {"data": _ref("AnswerData"), "_provenance": _ref("Credential")},
        },
        "Refusal": {
            "type": "object",
            "required": ["data", "_provenance"],
            "properties": {
                "data": {
                    "allOf": [_ref("AnswerData"), {"required": ["status", "error"]}],
                },
                "_provenance": _ref("Credential"),
            },
        },
        "PlainRefusal": {
            "type": "object",
            "required": ["data"],
            "properties": {
                "data": {
                    "type": "object",
                    "required": ["status", "error"],
                    "properties": {"status": _STRING, "error": _ref("Error")},
                },
            },
        },
    },
}

ACCEPT_PROVENANCE = {
    "name": "Accept-Provenance",
    "in": "header",
    "required": False,
    "description": "The credential's cryptosuite (default eddsa-jcs-2022)",
    "schema": {"type": "string", "enum": list(SUITES)},
}

LOG_ANSWERS: dict[str, Any] = {
    "/api/v1/log/checkpoint": {
        "type": "object",
        "required": ["origin", "treeSize", "rootHash", "timestamp", "note"],
        "properties": {"origin": _STRING, "treeSize": _INT, "rootHash": _B64, "note": _STRING},
    },
    "/api/v1/log/entries": {
        "type": "object",
        "required": ["start", "entries"],
        "properties": {
            "start": _INT,
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["index", "leaf", "entry"],
                    "properties": {"index": _INT, "leaf": _B64, "entry": {"type": "object"}},
                },
            },
        },
    },
    "/api/v1/log/proof/inclusion": {
        "type": "object",
        "required": ["index", "treeSize", "rootHash", "hashes"],
        "properties": {"hashes": {"type": "array", "items": _B64}},
    },
    "/api/v1/log/proof/consistency": {
        "type": "object",
        "required": ["first", "second", "hashes"],
        "properties": {"hashes": {"type": "array", "items": _B64}},
    },
    "/api/v1/keys": {
        "type": "object",
        "required": ["keys"],
        "properties": {"keys": {"type": "array", "items": {"type": "object"}}},
    },
    "/healthz": {"type": "object", "required": ["data"]},
}


def body_schemas(ttl_max_seconds: int) -> dict[str, Any]:
    """The request bodies; ``ttlSeconds`` up to this server's ``--ttl-max``."""
    lease = with_name_rules(_model_schema(LeaseBody))
    _cap_ttl(lease, ttl_max_seconds)
    scope = with_name_rules(_model_schema(ScopeBody))
    heartbeat = with_name_rules(_model_schema(HeartbeatBody))
    _cap_ttl(heartbeat, ttl_max_seconds)
    heartbeat["required"] = ["deadSeconds"]
    heartbeat["properties"]["deadSeconds"] = {
        "type": "integer",
        "minimum": 0,
        "maximum": DEAD_CEILING_SECONDS,
    }
    per_op = {f"Lease{op.value.title()}": op_body(lease, op) for op in Op}
    with_op = {
        "description": "A lease operation named by `op`, with that operation's body",
        "oneOf": [body | {"required": ["op", *body["required"]]} for body in per_op.values()],
    }
    return {
        "LeaseBody": lease,
        **per_op,
        "LeaseOpBody": with_op,
        "ScopeBody": scope,
        "HeartbeatBody": heartbeat,
        "NamespaceBody": _model_schema(NamespaceBody),
        **DOCUMENTS,
    }


def _cap_ttl(schema: dict[str, Any], ttl_max_seconds: int) -> None:
    ttl = schema["properties"]["ttlSeconds"]
    for choice in ttl.get("anyOf", [ttl]):
        if choice.get("type") == "integer":
            choice["maximum"] = ttl_max_seconds


def _model_schema(model: type[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema
