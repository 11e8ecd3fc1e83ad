"""Supervised background tasks: a failure is logged, retried with backoff and
reported by health, never silently the end of the task (STYLE 9b)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("tenure.tasks")

Step = Callable[[], Awaitable[float | None]]
"""One run of a task; it may return the seconds until the next run (else its interval)."""


@dataclass
class Supervised:
    """Runs ``step`` every ``interval`` seconds, or after the seconds its last run returned;
    after a failure waits twice as long each time (up to ``backoff_max``) and tries again, so a
    storage outage ends with the task resumed."""

    name: str
    step: Step
    interval: float
    backoff_max: float = 5.0
    failures: int = 0
    runs: int = 0
    last_error: str | None = None
    _next: float | None = None
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def start(self) -> None:
        self._task = asyncio.create_task(self._forever(), name=f"tenure-{self.name}")

    async def stop(self) -> None:
        task = self._task
        if task is None:
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    @property
    def state(self) -> str:
        """``running``, ``failing`` (its last attempt failed; retrying) or ``dead``."""
        if self._task is None or self._task.done():
            return "dead"
        return "failing" if self.failures else "running"

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"state": self.state, "runs": self.runs}
        if self.failures:
            data |= {"failures": self.failures, "lastError": self.last_error}
        return data

    async def _forever(self) -> None:
        while True:
            await asyncio.sleep(self._delay())
            try:
                self._next = await self.step()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._failed(error)
            else:
                self.runs += 1
                if self.failures:
                    logger.warning("%s recovered after %d failures", self.name, self.failures)
                self.failures, self.last_error = 0, None

    def _delay(self) -> float:
        if not self.failures:
            return self.interval if self._next is None else self._next
        backoff: float = max(self.interval, 0.05) * 2.0 ** min(self.failures, 16)
        return min(self.backoff_max, backoff)

    def _failed(self, error: Exception) -> None:
        self.failures += 1
        self.last_error = f"{type(error).__name__}: {error}"
        if self.failures == 1:
            logger.exception("%s failed; retrying with backoff", self.name)
        else:
            logger.warning("%s failed again (%d): %s", self.name, self.failures, self.last_error)


class Supervisor:
    """The runtime's background tasks, started and stopped together; their health in one place."""

    def __init__(self) -> None:
        self.tasks: dict[str, Supervised] = {}

    def add(self, name: str, step: Step, interval: float) -> Supervised:
        task = self.tasks[name] = Supervised(name, step, interval)
        return task

    def start(self) -> None:
        for task in self.tasks.values():
            task.start()

    async def stop(self) -> None:
        for task in self.tasks.values():
            await task.stop()

    @property
    def healthy(self) -> bool:
        return all(task.state == "running" for task in self.tasks.values())

    def as_data(self) -> dict[str, Any]:
        return {name: task.as_data() for name, task in self.tasks.items()}
