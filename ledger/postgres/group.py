"""What one PostgreSQL write transaction reads in bulk and holds back (docs/decisions/0036).

A group commit decides many calls under the ``log_head`` lock, and every round trip inside it
is time the other nodes wait (and, on the writer thread, a hand-off of the interpreter lock).
:class:`Group` keeps them few: the lock and the tree's size come in one round trip
(``store.lock_head``); a frontier reload — another node appended since — reads every node of
the tiling and the last entry in one, planned for the tree's size each time; the batch's
resources, their leases and which of them have queued waiters in one for all tenants; a freed
slot whose resource had no waiter then needs no read at all. The hot writes are held back
(``ledger/postgres/writes.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.changes import AddWaiter, AppendEntry, Change
from ledger.keys import sealing
from ledger.keys.names import NameCodec, needs_names
from ledger.lease.leases import Resource
from ledger.postgres.connection import Conn, Cursor
from ledger.postgres.reads import LEASES_OF, RESOURCES_OF, WAITED_OF
from ledger.postgres.writes import HeldWrites
from ledger.rows import resources_of
from verify.compact import tiling

Key = tuple[str, str]
_NODES = (
    "SELECT t.level, t.idx, t.hash FROM tree_nodes AS t"
    " JOIN unnest(%b::integer[], %b::bigint[]) AS u(level, idx) USING (level, idx)"
)


_LOCK = "SELECT 1 FROM log_head WHERE id = 1 FOR UPDATE"
_SIZE = "SELECT coalesce(max(idx) + 1, 0) FROM entries"
FRONTIER = (
    "SELECT t.level, t.idx, t.hash FROM (" + _SIZE + ") AS s(n)"
    " CROSS JOIN generate_series(0, 62) AS g(level)"
    " JOIN tree_nodes AS t ON t.level = g.level AND t.idx = (s.n >> (g.level + 1)) << 1"
    " WHERE (s.n >> g.level) & 1 = 1"
)
"""The tiling of the whole tree (``verify.compact.tiling``): a level whose bit is set in the
size holds one perfect subtree, the one after every larger one (by the primary key)."""
_LAST = "SELECT leaf FROM entries WHERE idx = (SELECT max(idx) FROM entries)"


class Ahead:
    """What a storage knows before it opens a transaction: the resources the next group's
    calls name (noted by ``warm_lease``) and whether another writer appended lately — then the
    frontier is read with the lock, not after it. Only hints: a guess that misses costs a read."""

    def __init__(self) -> None:
        self._keys: list[Key] = []
        self.moved = False
        self.end = -1

    def note(self, tenant: str, resource: str) -> None:
        self._keys.append((tenant, resource))

    def take(self) -> list[Key]:
        keys, self._keys = self._keys, []
        return keys


class Group:
    """One transaction's bulk reads and held-back writes, on ``conn`` holding the lock."""

    def __init__(self, conn: Conn, names: NameCodec | None, size: int) -> None:
        """``size``: the tree's size read when the lock was taken."""
        self._conn, self._names, self.size = conn, names, size
        self._opened = size
        self._held = None if names is None else HeldWrites(conn, names)
        self._frontier: dict[tuple[int, int], bytes] | None = None
        self._last: bytes | None = None
        self._quiet: set[Key] = set()
        """Resources read in bulk with no queued waiter, none queued since."""
        self._ahead: dict[Key, Resource] = {}
        self._read: set[Key] = set()
        """Resources read with the lock: :meth:`resources` answers them once without a read."""

    @classmethod
    def open(cls, conn: Conn, names: NameCodec | None, ahead: Ahead) -> Group:
        """Lock the log head — every writer of every node waits here in turn — then, sent
        together and answered in one round trip: the tree's size, the frontier and last entry
        if another writer appended lately, the noted resources. Each is a statement of its own,
        run once the lock is held: under READ COMMITTED its snapshot includes the last holder's
        commit, where a subquery of the locking statement would see the log as before the wait."""
        locked = conn.execute(_LOCK)
        size = conn.execute(_SIZE)
        reload = (_unprepared(conn, FRONTIER), _unprepared(conn, _LAST)) if ahead.moved else None
        keys = ahead.take() if names is not None else []
        sent = _send(conn, names, keys) if keys else None
        row = size.fetchone()
        assert row is not None and locked.fetchone() is not None, "log_head has its row"
        group = cls(conn, names, int(row[0]))
        ahead.moved = group.size != ahead.end
        if reload is not None:
            group._take_frontier(*reload)
        if sent is not None:
            group._ahead = group._take(needs_names(names), *sent)
            group._read = set(keys)
        return group

    def committed(self, ahead: Ahead) -> None:
        """The transaction committed: the tree's size this storage left."""
        ahead.end = self.size

    def flush(self) -> None:
        """Send the held-back writes (a read or another change must see them)."""
        if self._held is not None:
            self._held.flush()

    def hold(self, change: Change) -> bool:
        """Hold ``change`` back if it is a hot kind; False if the caller must send it now,
        after :meth:`flush`. Notes appends (the size) and waiters queued (no longer quiet)."""
        if isinstance(change, AppendEntry):
            self.size = max(self.size, change.index + 1)
        elif isinstance(change, AddWaiter):
            self._quiet.discard((change.tenant, change.resource))
        return self._held is not None and self._held.add(change)

    def node(self, level: int, index: int) -> bytes | None:
        """A node of the tiling of the tree as the lock found it (``None``: not one of those)."""
        if self._frontier is None:
            self._load_frontier()
        assert self._frontier is not None
        return self._frontier.get((level, index))

    def last_entry(self, index: int) -> bytes | None:
        """The entry at ``index`` if it is the last the lock found, else ``None``."""
        if self._opened == 0 or index != self._opened - 1:
            return None
        if self._frontier is None:
            self._load_frontier()
        return self._last

    def _load_frontier(self) -> None:
        self.flush()
        tiles = tiling(0, self._opened)
        found = _unprepared(self._conn, _NODES, ([lv for lv, _ in tiles], [ix for _, ix in tiles]))
        last = None
        if self._opened:
            sql = "SELECT leaf FROM entries WHERE idx = %s"
            last = _unprepared(self._conn, sql, (self._opened - 1,))
        self._take_frontier(found, last)

    def _take_frontier(self, found: Cursor, last: Cursor | None) -> None:
        self._frontier = {(int(lv), int(ix)): bytes(h) for lv, ix, h in found.fetchall()}
        row = None if last is None else last.fetchone()
        self._last = None if row is None else bytes(row[0])

    def resources(self, keys: Sequence[Key]) -> dict[Key, Resource]:
        """The resources of ``keys`` that exist, with their leases: those read with the lock
        at once, the others in one round trip for all tenants."""
        found: dict[Key, Resource] = {}
        rest: list[Key] = []
        for key in keys:
            if key in self._read:
                self._read.discard(key)  # once: a later read sees this transaction's writes
                if key in self._ahead:
                    found[key] = self._ahead.pop(key)
            else:
                rest.append(key)
        if rest:
            self.flush()
            found.update(
                self._take(needs_names(self._names), *_send(self._conn, self._names, rest))
            )
        return found

    def _take(self, names: NameCodec, wanted: Wanted, sent: Sent) -> dict[Key, Resource]:
        """Decode what :func:`_send` asked; note which resources have no queued waiter. A lease
        whose resource row is gone is a damaged ledger: :class:`StorageError`."""
        found: dict[Key, Resource] = {}
        waited: set[Key] = set()
        for t, (res_rows, lease_rows, waiter_rows) in sent:
            found.update(resources_of(names, wanted, t, res_rows.fetchall(), lease_rows.fetchall()))
            waited.update(wanted[(t, bytes(r))] for (r,) in waiter_rows.fetchall())
        self._quiet.update(key for key in wanted.values() if key not in waited)
        return found

    def quiet(self, tenant: str, resource: str) -> bool:
        """Whether the resource is known to have no queued waiter (no read needed)."""
        return (tenant, resource) in self._quiet


def _unprepared(conn: Conn, sql: str, params: tuple[object, ...] | None = None) -> Cursor:
    """Run a read of the tree planned for its size now. psycopg prepares a statement on its
    fifth run, and PostgreSQL keeps a prepared plan until the tables are analyzed: one made for
    the small tree of a node's first groups reads a whole level once it is large
    (docs/decisions/0043)."""
    return conn.execute(sql, params, prepare=False)


Wanted = dict[tuple[bytes, bytes], Key]
Sent = list[tuple[bytes, tuple[Cursor, Cursor, Cursor]]]


def _send(conn: Conn, names: NameCodec | None, keys: Sequence[Key]) -> tuple[Wanted, Sent]:
    """Send, not wait for, the reads of ``keys``' resources, leases and queued waiters."""
    wanted, by_tenant = sealing.resource_keys(needs_names(names), keys)
    sent: Sent = []
    for t, digests in by_tenant.items():
        res, leases, waited = (
            conn.execute(sql, (digests, t)) for sql in (RESOURCES_OF, LEASES_OF, WAITED_OF)
        )
        sent.append((t, (res, leases, waited)))
    return wanted, sent
