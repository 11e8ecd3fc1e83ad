"""What a backend may offer the writer beyond the seam: its write lock to lend, and warming."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ledger.storage import Storage


class Turns(Protocol):
    """A backend's write lock, taken by one thread for another (docs/decisions/0017)."""

    def lend(self, thread: int) -> None:
        """Wait for the lock and hold it for ``thread`` (an ident): its transactions, until
        :meth:`give_back`, run under it without taking it again."""
        ...

    def give_back(self) -> None: ...


@runtime_checkable
class WriterStrategy(Protocol):
    """How the writer goes fastest over a backend (``ledger/writer/committer.py``): its speed hooks,
    checked for once when the writer is made (:func:`writer_strategy`), never per call."""

    def turns(self) -> Turns | None:
        """The write lock, where a transaction is short and local enough for the event loop to
        run it itself (SQLite); ``None`` where writes stay on a writer thread (PostgreSQL,
        whose transactions wait for the network)."""
        ...

    def warm_lease(self, tenant: str, resource: str, holder: str | None, scope: str | None) -> None:
        """Make, outside any transaction, what writing this lease's rows will need (digests,
        sealed names), so the write transaction, which excludes every other writer, only looks
        it up. Nothing is written; a backend without sealed names does nothing."""
        ...


class _ThreadWriter:
    """The strategy of a backend that offers none: a writer thread, nothing to warm."""

    def turns(self) -> Turns | None:
        return None

    def warm_lease(self, tenant: str, resource: str, holder: str | None, scope: str | None) -> None:
        return None


def writer_strategy(storage: Storage) -> WriterStrategy:
    """The writer's hooks ``storage`` offers, else a writer thread's."""
    return storage if isinstance(storage, WriterStrategy) else _ThreadWriter()
