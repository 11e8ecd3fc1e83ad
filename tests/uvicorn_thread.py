"""An ASGI app served by a real uvicorn on a real socket, in a thread of the test's process."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    """uvicorn's server, saying when its sockets listen (or its start failed) by an event."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = threading.Event()

    async def startup(self, sockets: Any = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.up.set()

    def run(self, sockets: Any = None) -> None:
        try:
            super().run(sockets)
        finally:
            self.up.set()  # a start that failed before listening does not leave us waiting


@contextlib.contextmanager
def serving(config: uvicorn.Config, seconds: float = 20) -> Iterator[None]:
    """Serve ``config`` for the block: return once it listens, stop and join it after."""
    server = _Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    server.up.wait(seconds)
    assert server.started, "the server did not start"
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(seconds)
