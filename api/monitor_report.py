"""How ``tenure monitor`` reports what it sees: one event a line, as JSON (``--json``, for
machines) or as a sentence for a person (a violation with its evidence)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from verify.monitor_state import Seen


class Reporter:
    """Events as JSON lines (--json) or as lines for a person."""

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self.out, self.as_json = out, as_json

    def event(self, kind: str, **fields: Any) -> None:
        if self.as_json:
            print(json.dumps({"event": kind, **fields}, ensure_ascii=False), file=self.out)
        else:
            print(_TEXT.get(kind, _plain)(kind, fields), file=self.out)
        self.out.flush()

    def checkpoint(self, new: Seen, added: int, cosigned: bool) -> None:
        root = new.as_data()["rootHash"]
        fields = {"origin": new.origin, "treeSize": new.size, "rootHash": root}
        self.event("checkpoint", **fields, newEntries=added, cosigned=cosigned)


def _plain(kind: str, fields: dict[str, Any]) -> str:
    return f"{kind}: " + ", ".join(f"{k}={v}" for k, v in fields.items())


def _violation(kind: str, fields: dict[str, Any]) -> str:
    where = "" if fields.get("index") is None else f"entry {fields['index']}: "
    line = f"VIOLATION {where}{fields['check']}: {fields['message']}"
    if fields.get("evidence") is not None:
        line += "\nevidence: " + json.dumps(fields["evidence"], indent=2, ensure_ascii=False)
    return line


def _checkpoint(kind: str, fields: dict[str, Any]) -> str:
    extra = ", cosigned" if fields["cosigned"] else ""
    return f"checkpoint {fields['treeSize']} verified (+{fields['newEntries']} entries){extra}"


def _start(kind: str, fields: dict[str, Any]) -> str:
    keys = ", ".join(fields["trusted"])
    where = f"watching {fields['url']} from tree size {fields['treeSize']}"
    return f"{where}; trusting {keys} ({fields['trust']})"


_TEXT: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "start": _start,
    "violation": _violation,
    "checkpoint": _checkpoint,
}
