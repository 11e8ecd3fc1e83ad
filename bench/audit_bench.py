"""Benchmark ``verify.audit`` over a synthetic, valid ledger export (DESIGN §6).

Not a test: prints figures. Writes ``--entries`` entries (acquire/release pairs over ~1000
resources) to a temporary JSON Lines export, with a checkpoint signed every 100,000 entries and
one at the end, then times ``audit(parse_lines(file))``: reading, JSON, base64, canonical-JSON
check, leaf hashing, roots, signatures and the invariants in one pass. Goal: >= 50,000 entries/s.

    .venv/bin/python bench/audit_bench.py [--entries N]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.log.checkpoint import checkpoint_body, sign_note
from ledger.log.merkle import CompactRange
from ledger.log.text import iso
from verify.audit import audit, parse_lines
from verify.jcs import canonicalize
from verify.multikey import did_key, public_key_multibase
from verify.rfc9162 import leaf_hash

ORIGIN = "bench.tenure.local/log/0000"
RESOURCES = 1000
CHECKPOINT_EVERY = 100_000
T0 = 1_900_000_000_000  # ms, 2030
TTL = 30_000
LIFECYCLE_END = T0 + 86_400_000


def _hex(label: str, n: int) -> str:
    return hashlib.sha256(f"{label}{n}".encode()).hexdigest()


def entry(index: int) -> bytes:
    """Entry ``index`` of the pair ``index // 2``: the acquire, then its release 1 ms later."""
    pair, release = divmod(index, 2)
    resource = pair % RESOURCES
    granted_at = T0 + 2 * pair
    return canonicalize(
        {
            "v": 1,
            "index": index,
            "time": iso(granted_at + release),
            "kind": "release" if release else "acquire",
            "tenant": _hex("tenant", 0),
            "resource": _hex("resource", resource),
            "holder": _hex("holder", resource),
            "fencingToken": pair // RESOURCES + 1,
            "expiresAt": iso(granted_at + TTL),
            "absoluteExpiresAt": iso(LIFECYCLE_END),
            "capacity": 1,
            "ownerTokenDigest": _hex("owner", pair),
            "leaseId": index - release,
        }
    )


def write_export(out: TextIO, entries: int, key: Ed25519PrivateKey) -> None:
    def line(record: dict[str, Any]) -> None:
        out.write(json.dumps(record, separators=(",", ":")) + "\n")

    public = key.public_key()
    line({"type": "tenure-ledger-export", "version": 1, "origin": ORIGIN, "treeSize": entries})
    line(
        {
            "type": "key",
            "did": did_key(public),
            "publicKeyMultibase": public_key_multibase(public),
            "validFrom": iso(T0 - 1000),
            "validUntil": None,
        }
    )
    tree = CompactRange.empty()
    for index in range(entries):
        leaf = entry(index)
        tree.append(leaf_hash(leaf))
        line({"type": "entry", "index": index, "leaf": base64.b64encode(leaf).decode()})
        if tree.size % CHECKPOINT_EVERY == 0 or tree.size == entries:
            note = sign_note(checkpoint_body(ORIGIN, tree.size, tree.root()), ORIGIN, key)
            root = base64.b64encode(tree.root()).decode()
            stamp = iso(T0 + 2 * index)
            record = {"type": "checkpoint", "treeSize": tree.size, "rootHash": root}
            line(record | {"timestamp": stamp, "note": note})


def _progress(done: int) -> None:
    print(f"  audited {done:,}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.jsonl"
        started = time.perf_counter()
        key = Ed25519PrivateKey.generate()
        with path.open("w") as out:
            write_export(out, args.entries, key)
        built = time.perf_counter() - started
        print(
            f"built {args.entries:,} entries ({path.stat().st_size / 1e6:.0f} MB) in {built:.1f}s"
        )
        started = time.perf_counter()
        with path.open("rb") as lines:
            trusted = [did_key(key.public_key())]  # as `tenure audit --trust` is run
            report = audit(parse_lines(lines), trusted, progress=_progress)
        took = time.perf_counter() - started
    print(
        f"audit: {report.entries:,} entries, {report.checkpoints_verified}/{report.checkpoints}"
        f" checkpoints verified, {len(report.violations)} violations,"
        f" {len(report.warnings)} warnings in {took:.2f}s"
    )
    print(f"{report.entries / took:,.0f} entries/s (goal >= 50,000)")
    if report.violations:
        print("\n".join(str(v) for v in report.violations[:5]))
        sys.exit(1)


if __name__ == "__main__":
    main()
