"""The ledger and the keys are private to their owner, and a folder tenure cannot
write stops `tenure serve` with a clear message and exit 2, not a traceback. A batch writes no page
of the ledger outside its folder (each once spilled a statement journal to /var/tmp)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from ledger.keys.keyring import load_or_create_names_key, load_or_create_secret, signing_keys
from ledger.sqlite.opening import open_db
from ledger.sqlite.schema import DB_NAME
from tests.conftest import ROOT


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_and_keys_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a usual umask: files 0644 and folders 0755 unless tenure says so
    try:
        conn, _ = open_db(tmp_path / "data", None)
        conn.execute("INSERT INTO meta(key, value) VALUES ('probe', 'x')")  # the WAL exists now
        load_or_create_secret(tmp_path / "keys")
        load_or_create_names_key(tmp_path / "keys")
        signing_keys(tmp_path / "keys", 0)
    finally:
        os.umask(old)
    data = tmp_path / "data"
    assert mode(data) == 0o700 and mode(tmp_path / "keys") == 0o700
    for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm"):
        assert mode(data / name) == 0o600, name
    for key_file in (tmp_path / "keys").iterdir():
        assert mode(key_file) == 0o600, key_file
    conn.close()


def test_an_unwritable_data_folder_exits_2_with_a_message(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    if os.geteuid() == 0:  # root writes through file modes: use a folder no one may create
        data = Path("/sys/tenure-read-only")
    else:
        data.chmod(0o500)
    cmd = [sys.executable, "-m", "api", "serve", "--port", "1", "--data", str(data)]
    cmd += ["--keys", str(tmp_path / "keys")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot write the ledger" in done.stderr and str(data) in done.stderr


_SPILL_PROBE = """
import os, sys
from pathlib import Path
from ledger.changes import AppendEntry, PutLease, PutNodes, PutResource
from ledger.sqlite.backend import SQLiteStorage
from tests.names_key import NAMES

storage = SQLiteStorage.open(Path(sys.argv[1]), NAMES)

def grants(first, count):
    with storage.transaction() as tx:
        for n in range(first, first + count):
            tx.apply(AppendEntry(n, b"{}"))
            tx.apply(PutNodes(((0, n, bytes(32)),)))
            tx.apply(PutResource("t", f"job-{n}", 1, 1, None, None, None, None, None))
            tx.apply(PutLease("t", f"job-{n}", 1, "w", bytes(32), 9, None, n))
        tx.flush()  # the batch's multi-row INSERTs have run; its transaction is still open
        opened = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                opened.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the listing's own descriptor, closed meanwhile
                pass
        return opened

grants(0, 2000)
print("\\n".join(grants(2000, 64)))
"""


def test_a_batch_writes_no_page_outside_the_data_folder(tmp_path: Path) -> None:
    """A batch of 64 grants into a ledger of 2,000 changes ~64 of its pages in each multi-row
    INSERT: SQLite's statement journal for them stays in memory, where by default it spills to
    a file in the temp folder (made, unlinked at once, open until the transaction ends)."""
    spill = tmp_path / "tmp"
    spill.mkdir()
    env = {**os.environ, "SQLITE_TMPDIR": str(spill)}  # read once, as SQLite starts
    cmd = [sys.executable, "-c", _SPILL_PROBE, str(tmp_path / "data")]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    opened = done.stdout.split("\n")
    assert any(path.endswith(DB_NAME) for path in opened)  # the probe sees the ledger open
    assert not [path for path in opened if path.startswith(str(spill))]
