"""Per-credential cost of Data Integrity signing and verification, for both suites.

Run: ``.venv/bin/python bench/provenance_bench.py [runs]``. Prints the median (and
10th/90th percentiles) in µs over many runs, on a representative ~1.5 KB receipt.
The rdfc credential uses a stand-in context (tenure's own is not written yet) that
defines every term by ``@vocab``; the cost is dominated by RDFC either way.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.keys.signer import Signer
from verify import jcs
from verify.dataintegrity import SUITES, verify_proof

BENCH_CONTEXT_IRI = "https://tenure.invalid/bench/v1"
BENCH_CONTEXTS = {BENCH_CONTEXT_IRI: {"@context": {"@vocab": "https://tenure.invalid/bench#"}}}
CREATED = "2025-06-01T12:00:00Z"
HASH = "3f1b2c9d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c"


def credential(issuer: str) -> dict[str, Any]:
    """A receipt shaped like DESIGN §3.3/§5 (an acquire answer), about 1.5 KB signed."""
    subject = {
        "type": "LeaseAnswer",
        "status": "pass",
        "op": "acquire",
        "outcome": "GRANTED",
        "granted": True,
        "resource": "db/primary-migration-lock",
        "holder": "worker-17.prod.example",
        "fencingToken": 1234567,
        "expiresAt": "2025-06-01T12:00:30Z",
        "absoluteExpiresAt": "2025-06-01T13:00:00Z",
        "deterministic": True,
        "replayed": False,
        "witnesses": [{"rule": "capacity", "capacity": 1, "holders": 0}],
        "versions": {"engine": "0.1.0", "ledgerSchema": 1, "cryptosuite": "eddsa-jcs-2022"},
        "limits": {"ttlCapSeconds": 3600, "lifecycleSeconds": 86400, "bodyBytes": 65536},
        "ledger": {"logIndex": 998877, "leafHash": HASH, "treeSize": 998878, "rootHash": HASH},
        "manifest": {
            "claimGenerator": "tenure/0.1.0",
            "alg": "sha256",
            "assertions": [
                {"label": label, "hash": HASH}
                for label in ("tenure.request", "tenure.data", "tenure.ledger-entry")
            ],
        },
    }
    return {
        "@context": ["https://www.w3.org/ns/credentials/v2", BENCH_CONTEXT_IRI],
        "type": ["VerifiableCredential", "LeaseReceipt"],
        "issuer": issuer,
        "validFrom": CREATED,
        "credentialSubject": subject,
    }


def median_us(action: Callable[[], object], runs: int) -> tuple[float, float, float]:
    """Median, p10 and p90 wall time of ``action`` in µs, after a warm-up."""
    for _ in range(max(10, runs // 20)):
        action()
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        action()
        samples.append((time.perf_counter_ns() - start) / 1000)
    deciles = statistics.quantiles(samples, n=10)
    return statistics.median(samples), deciles[0], deciles[-1]


def bench_suite(signer: Signer, unsigned: dict[str, Any], suite: str, runs: int) -> None:
    """Print the median cost of signing and of verifying one credential with ``suite``."""
    runs = max(50, runs)
    signed = signer.sign(unsigned, suite, CREATED, BENCH_CONTEXTS)
    assert verify_proof(signed, extra_contexts=BENCH_CONTEXTS).verified
    size = len(jcs.canonicalize(signed))
    sign = median_us(lambda: signer.sign(unsigned, suite, CREATED, BENCH_CONTEXTS), runs)
    check = median_us(lambda: verify_proof(signed, extra_contexts=BENCH_CONTEXTS), runs)
    for name, (med, p10, p90) in (("sign", sign), ("verify", check)):
        print(
            f"{suite:16} {name:6} median {med:8.1f} µs  "
            f"(p10 {p10:.1f}, p90 {p90:.1f}; {runs} runs; signed {size} B)"
        )


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 5000
    key = Ed25519PrivateKey.generate()
    signer = Signer(key)
    unsigned = credential(signer.did)
    print(f"credential: {len(jcs.canonicalize(unsigned))} bytes unsigned (JCS), runs={runs}")
    for suite in SUITES:
        bench_suite(signer, unsigned, suite, runs if suite == "eddsa-jcs-2022" else runs // 20)
    parts = {
        "rfc8785.dumps (reference JCS)": lambda: rfc8785.dumps(unsigned),
        "verify.jcs.canonicalize (fast JCS)": lambda: jcs.canonicalize(unsigned),
        "Ed25519 sign (64 bytes)": lambda: key.sign(bytes(64)),
    }
    for name, action in parts.items():
        print(f"  part: {name:36} median {median_us(action, runs)[0]:7.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
