"""A progress bar for long operator jobs (`tenure export`, `tenure audit`) on a terminal.

Drawn on standard error only when it is a TTY and ``--quiet`` was not given; redrawn at most
ten times a second, so a fast job is not slowed by its own bar. Off a terminal it prints
nothing: scripts read the summary line the command prints at the end.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


class Progress:
    """``update(done)`` of ``total`` units (entries or bytes); ``close()`` clears the line."""

    def __init__(self, what: str, total: int, quiet: bool = False, out: TextIO | None = None):
        self.what = what
        self.total = max(total, 0)
        self.out = sys.stderr if out is None else out
        self.shown = not quiet and self.out.isatty()
        self._drawn_at = 0.0
        self._started = time.monotonic()

    def update(self, done: int) -> None:
        """Redraw the bar for ``done`` units, at most every 0.1 s."""
        now = time.monotonic()
        if not self.shown or now - self._drawn_at < 0.1:
            return
        self._drawn_at = now
        self.out.write("\r" + self.line(done, now - self._started))
        self.out.flush()

    def line(self, done: int, seconds: float) -> str:
        """The bar's text for ``done`` units after ``seconds``."""
        share = 1.0 if self.total == 0 else min(done / self.total, 1.0)
        filled = int(share * WIDTH)
        bar = "#" * filled + "-" * (WIDTH - filled)
        rate = done / seconds if seconds > 0 else 0.0
        return f"{self.what} [{bar}] {share:4.0%} {done}/{self.total} {rate:,.0f}/s"

    def close(self) -> None:
        """Erase the bar so the summary line stands alone."""
        if self.shown and self._drawn_at:
            self.out.write("\r\x1b[K")
            self.out.flush()
