"""Bounds on what a verifier accepts before it spends real work (RDFC-1.0 §4.4).

A tenure document is small and shallow: a receipt nests about six levels and holds a few dozen
values; an export record nests two. ``check_bounds`` walks a parsed JSON value iteratively (no
recursion, so no RecursionError however deep the input) and raises MalformedInput naming the
rule broken. ``check_int`` keeps integers inside I-JSON's exact range (RFC 7493 §2.2), so a
``logIndex`` of 2**63 is a failed check, never an overflow further down.
"""

from __future__ import annotations

from typing import Any

from verify.errors import MalformedInput

__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_SAFE_INTEGER", "check_bounds", "check_int"]

MAX_DEPTH = 32
"""Deepest nesting of objects and arrays any tenure document uses, with ample room."""
MAX_NODES = 20_000
"""Most JSON values (objects, arrays, scalars) in one document: a bundle holds a few hundred."""
MAX_SAFE_INTEGER = 2**53 - 1


def check_bounds(
    value: Any, what: str = "document", max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> None:
    """MalformedInput if ``value`` nests deeper than ``max_depth`` or holds too many values."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    nodes = 0
    while stack:
        node, level = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise MalformedInput(f"{what} holds more than {max_nodes} JSON values")
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level > max_depth:
            raise MalformedInput(f"{what} nests deeper than {max_depth} levels")
        stack.extend((child, level + 1) for child in children)


def check_int(value: Any, what: str) -> None:
    """Raise MalformedInput unless ``value`` is an integer within ±(2**53 - 1) (I-JSON)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        raise MalformedInput(f"{what} {value} is outside I-JSON's exact integer range (2**53 - 1)")
