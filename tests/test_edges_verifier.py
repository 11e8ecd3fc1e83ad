"""Verifier messages print hashes in base64, as the API does, and `verify-provenance --json |
head` ends without a traceback."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from verify.errors import RootMismatch
from verify.rfc9162 import verify_inclusion


def test_verifier_messages_print_hashes_in_base64() -> None:
    leaf, root = b"\x01" * 32, b"\x02" * 32
    with pytest.raises(RootMismatch) as raised:
        verify_inclusion(0, 1, leaf, [], root)
    message = str(raised.value)
    assert base64.b64encode(root).decode() in message and root.hex() not in message


def test_verify_provenance_json_into_head_ends_without_a_traceback(tmp_path: object) -> None:
    files = [str(ROOT / "pyproject.toml")] * 3000  # unreadable as receipts: one line each
    script = (
        f"{sys.executable} -m verify --json {' '.join(files)} | head -n 1 >/dev/null; "
        "exit ${PIPESTATUS[0]}"
    )
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 2
