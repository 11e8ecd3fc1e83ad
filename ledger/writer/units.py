"""One batch of the group committer (``committer.py``): what a unit of work is, the hooks of
whoever submits units, and how a batch's units run in one transaction and their futures
resolve — the parts that do not depend on who writes (a thread or the event loop)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ledger.changes import Change
from ledger.storage import StorageError, Transaction

Work = Sequence[Change] | Callable[[Transaction], Any]
"""One caller's unit of work: changes to apply in order, or a function run in the transaction."""

Prepare = Callable[[], object]
"""Work a unit can do before the transaction: it must write nothing and decide nothing."""
Item = tuple[Work, "asyncio.Future[Any]", Prepare | None, "asyncio.Future[Any] | None"]
"""A unit, the future that resolves once it is durable, its preparation, and the future that
resolves as soon as its statements have run (:meth:`GroupCommitter.submit_early`)."""


class BatchHooks(Protocol):
    """Per-transaction state of whoever submits units (the lease service)."""

    def begin(self, tx: Transaction) -> None: ...

    def committed(self) -> None: ...

    def failed(self, error: BaseException) -> None: ...


@runtime_checkable
class RetryHooks(Protocol):
    """Hooks that can start a batch over: its transaction was rolled back, to be tried again
    without a unit that raised (the writer thread's batches, docs/decisions/0036)."""

    def abandoned(self) -> None: ...


class UnitFailed(Exception):
    """The unit at ``index`` raised (its error is the cause): its transaction is rolled back."""

    def __init__(self, index: int) -> None:
        super().__init__(f"unit {index} of the batch failed")
        self.index = index


def prepare_all(batch: list[Item]) -> None:
    """Run each unit's preparation; a failed one only leaves a cache cold."""
    for _, _, prepare, _ in batch:
        if prepare is not None:
            with contextlib.suppress(Exception):  # a cache stays cold; the unit meets it again
                prepare()


def run_units(tx: Transaction, batch: list[Item], isolate: bool) -> list[Any]:
    """Run every unit in ``tx``; ``isolate``: a unit that raises is named by :class:`UnitFailed`."""
    if not isolate:
        return [run_work(tx, work) for work, _, _, _ in batch]
    results = []
    for n, (work, _, _, _) in enumerate(batch):
        try:
            results.append(run_work(tx, work))
        except Exception as error:
            raise UnitFailed(n) from error
    return results


def run_work(tx: Transaction, work: Work) -> Any:
    if callable(work):
        return work(tx)
    apply = tx.apply
    for change in work:
        apply(change)
    return None


def resolve_early(batch: list[Item], results: list[Any]) -> None:
    """Resolve the early futures: the units' statements ran, not yet durable."""
    for n, (_, _, _, early) in enumerate(batch):
        if early is not None and not early.done():
            early.set_result(results[n])


def resolve(batch: list[Item], results: list[Any], error: BaseException | None) -> None:
    """Resolve every future of a committed batch, or fail them all with ``StorageError``."""
    for n, (_, future, _, early) in enumerate(batch):
        for one in (future, early):
            if one is None or one.done():
                continue
            if error is None:
                one.set_result(results[n])
            else:
                one.set_exception(StorageError(str(error)))


def unattended(future: asyncio.Future[Any]) -> None:
    """A done-callback for a unit nobody awaits: its failure is reported by the service's
    ``healthy``, not logged by asyncio as never retrieved."""
    if not future.cancelled():
        future.exception()
