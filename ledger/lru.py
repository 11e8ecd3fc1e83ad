"""A size-capped least-recently-used cache that counts its hits, so that nothing in
memory grows with the tenants, resources or entries ever seen."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``size`` values; :meth:`get` computes a missing one with ``make``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, make: Callable[[K], V]) -> V:
        items = self._items
        value = items.get(key)
        if value is not None:
            self.hits += 1
            items.move_to_end(key)
            return value
        self.misses += 1
        value = items[key] = make(key)
        if len(items) > self.size:
            items.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._items)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0
