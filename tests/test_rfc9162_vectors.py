"""Walk every transparency-dev/merkle probe vector in tests/vectors/merkle (STYLE.md §10).

Each JSON file is one probe: ``wantErr`` means the verifier must raise a VerificationError, else
it must accept. Byte fields are standard base64 (Go's encoding of []byte).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from verify.errors import VerificationError
from verify.rfc9162 import verify_consistency, verify_inclusion

VECTORS = Path(__file__).parent / "vectors" / "merkle"
FILES = sorted(p for kind in ("inclusion", "consistency") for p in (VECTORS / kind).rglob("*.json"))


def _b(value: str) -> bytes:
    return base64.b64decode(value, validate=True)


def _hashes(values: list[str] | None) -> list[bytes]:
    # Go marshals a nil [][]byte as null.
    return [_b(v) for v in values or []]


def _run(probe: dict[str, Any]) -> None:
    if "leafIdx" in probe:
        verify_inclusion(
            probe["leafIdx"],
            probe["treeSize"],
            _b(probe["leafHash"]),
            _hashes(probe["proof"]),
            _b(probe["root"]),
        )
    else:
        verify_consistency(
            probe["size1"],
            probe["size2"],
            _b(probe["root1"]),
            _b(probe["root2"]),
            _hashes(probe["proof"]),
        )


def test_vectors_are_present() -> None:
    # 98 inclusion + 98 consistency probes at the pinned commit; guards against an empty walk.
    assert len(FILES) == 196


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(VECTORS)))
def test_probe(path: Path) -> None:
    probe = json.loads(path.read_text())
    if probe["wantErr"]:
        with pytest.raises(VerificationError):
            _run(probe)
    else:
        _run(probe)
