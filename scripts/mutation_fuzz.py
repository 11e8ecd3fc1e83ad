"""Mutation fuzz of a real receipt bundle and a real ledger export.

Applies seeded random mutations — flipped bytes in signed content and base64, changed numbers
(huge ones too), dropped, duplicated and reordered fields and records, swapped keys, deep
nesting — and checks two properties for each:

- no traceback: ``verify_document`` returns a report, ``audit`` a report or MalformedInput;
- nothing signed changes unnoticed: when a mutated document still passes, what its signatures
  cover (``bundle_signed_view``, ``export_signed_view``) is exactly the original's.

``tests/test_mutation_fuzz.py`` runs it on documents from a live server; it also runs alone:
``python scripts/mutation_fuzz.py BUNDLE.json EXPORT.jsonl DID [COUNT]``."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
import sys
from collections.abc import Callable, Collection
from typing import Any

from verify.audit import audit
from verify.bundle import verify_document
from verify.errors import MalformedInput

Path_ = tuple[Any, ...]


def paths(document: Any) -> list[Path_]:
    """Every path to a value inside ``document`` (iteratively: deep input is fine)."""
    found: list[Path_] = []
    stack: list[tuple[Path_, Any]] = [((), document)]
    while stack:
        path, node = stack.pop()
        found.append(path)
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        stack.extend(((*path, key), child) for key, child in items)
    return found


def _get(document: Any, path: Path_) -> Any:
    for key in path:
        document = document[key]
    return document


def _flip_string(value: str, rng: random.Random) -> str:
    try:
        raw = bytearray(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        raw = bytearray()
    if raw:  # flip a bit inside base64 content, keep it valid base64
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        return base64.b64encode(bytes(raw)).decode()
    if not value:
        return "x"
    at = rng.randrange(len(value))
    return value[:at] + chr((ord(value[at]) ^ 1) or 0x41) + value[at + 1 :]


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _new_value(old: Any, rng: random.Random) -> Any:
    choices: list[Callable[[], Any]] = [
        lambda: None,
        lambda: _deep(rng.choice((40, 2000))),
        lambda: rng.choice((2**53, 2**63, 2**64 + 1, -1, 10**30)),
    ]
    if isinstance(old, str):
        choices += [lambda: _flip_string(old, rng)] * 4
    if isinstance(old, int) and not isinstance(old, bool):
        choices += [lambda: old + 1, lambda: old - 1, lambda: old ^ 1 << rng.randrange(8)]
    if isinstance(old, list) and old:
        choices += [lambda: old[::-1], lambda: old + old[:1], lambda: old[1:]]
    if isinstance(old, dict):
        choices += [lambda: {**old, "extra": "slipped in"}, lambda: dict(list(old.items())[1:])]
    return rng.choice(choices)()


def mutate(document: Any, rng: random.Random) -> tuple[Any, Path_]:
    """A deep copy of ``document`` with one value at a random path replaced, and that path."""
    mutated = copy.deepcopy(document)
    path = rng.choice(paths(mutated))
    if not path:
        return {**mutated, "extra": 1}, path
    parent = _get(mutated, path[:-1])
    if isinstance(parent, dict) and rng.random() < 0.15:
        del parent[path[-1]]
    else:
        parent[path[-1]] = _new_value(parent[path[-1]], rng)
    return mutated, path


def bundle_signed_view(bundle: Any) -> Any:
    """What a bundle's signatures cover: the credential, the hashed data, the entry bytes and
    the position, roots and origins of the signed checkpoints."""
    receipt = bundle["receipt"]
    data = {
        k: v for k, v in receipt.get("data", {}).items() if k not in ("ownerToken", "namespace")
    }
    checkpoint = bundle["checkpoint"]
    consistency = bundle.get("consistency") or {}
    later = consistency.get("checkpoint", {})
    return (
        json.dumps(receipt.get("_provenance"), sort_keys=True),
        json.dumps(data, sort_keys=True),
        bundle["entry"],
        (bundle["inclusion"]["index"], bundle["inclusion"]["treeSize"]),
        (checkpoint["origin"], checkpoint["treeSize"], checkpoint["rootHash"]),
        (later.get("origin"), later.get("treeSize"), later.get("rootHash")),
    )


def export_signed_view(records: list[dict[str, Any]]) -> list[tuple[Any, bytes]]:
    """What an export's checkpoints prove: the entries, in order, by index and exact bytes."""
    return [
        (r.get("index"), base64.b64decode(r["leaf"])) for r in records if r.get("type") == "entry"
    ]


def fuzz_bundle(bundle: Any, trusted: Collection[str], count: int, seed: int = 8) -> list[str]:
    """Problems found (empty: none) over ``count`` mutations of a genuine bundle."""
    assert verify_document(bundle, trusted).ok, "the original bundle must pass"
    rng, problems, original = random.Random(seed), [], bundle_signed_view(bundle)
    for n in range(count):
        mutated, path = mutate(bundle, rng)
        try:
            report = verify_document(mutated, trusted)
        except Exception as error:  # any exception is the finding
            problems.append(f"bundle mutation {n} at {path}: {type(error).__name__}: {error}")
            continue
        if report.ok and bundle_signed_view(mutated) != original:
            problems.append(f"bundle mutation {n} at {path} changed signed content and passed")
    return problems


def fuzz_export(
    records: list[dict[str, Any]], trusted: Collection[str], count: int, seed: int = 8
) -> list[str]:
    """Problems found over ``count`` mutations (one value, or a dropped, duplicated or moved
    record) of a genuine export."""
    assert audit(records, trusted).ok, "the original export must pass"
    rng, problems, original = random.Random(seed), [], export_signed_view(records)
    for n in range(count):
        mutated, where = _mutate_records(records, rng)
        try:
            report = audit(iter(mutated), trusted)
        except MalformedInput:
            continue  # not an export: exit 2 with a message
        except Exception as error:  # any exception is the finding
            problems.append(f"export mutation {n} ({where}): {type(error).__name__}: {error}")
            continue
        try:
            changed = export_signed_view(mutated) != original
        except (KeyError, TypeError, ValueError, binascii.Error):
            changed = True
        if report.ok and changed:
            problems.append(f"export mutation {n} ({where}) changed signed content and passed")
    return problems


def _mutate_records(records: list[dict[str, Any]], rng: random.Random) -> tuple[Any, str]:
    mutated = copy.deepcopy(records)
    at = rng.randrange(len(mutated))
    op = rng.choice(("value", "value", "value", "drop", "duplicate", "swap"))
    if op == "drop":
        del mutated[at]
    elif op == "duplicate":
        mutated.insert(at, copy.deepcopy(mutated[at]))
    elif op == "swap" and at + 1 < len(mutated):
        mutated[at], mutated[at + 1] = mutated[at + 1], mutated[at]
    else:
        mutated[at], path = mutate(mutated[at], rng)
        return mutated, f"record {at} at {path}"
    return mutated, f"{op} record {at}"


USAGE = "usage: python scripts/mutation_fuzz.py BUNDLE.json EXPORT.jsonl DID [COUNT]"


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4) or (len(argv) == 4 and not argv[3].isdigit()):
        print(USAGE, file=sys.stderr)
        return 2
    bundle_path, export_path, did, *rest = argv
    count = int(rest[0]) if rest else 300
    with open(bundle_path, encoding="utf-8") as file:
        bundle = json.load(file)
    with open(export_path, encoding="utf-8") as file:
        records = [json.loads(line) for line in file if line.strip()]
    problems = fuzz_bundle(bundle, {did}, count) + fuzz_export(records, [did], count)
    print("\n".join(problems) or f"{count} + {count} mutations: nothing signed changed unnoticed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
