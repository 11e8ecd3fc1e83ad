"""``tenure lease run RESOURCE [options] -- COMMAND [ARGS…]``: hold a lease while a command runs,
as ``consul lock`` and ``flock(1)`` do.

The command starts once the lease is granted, with ``TENURE_FENCING_TOKEN`` and
``TENURE_RESOURCE`` in its environment (pass the token to the store it writes to). The lease is
renewed in the background and released when the command ends. If it is lost, the command gets
SIGTERM, then SIGKILL after ``--grace`` seconds. SIGINT, SIGTERM and SIGHUP sent to ``tenure``
are forwarded to the command.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from api.files import atomic_write
from api.revoke_cli import add_revoke_parser, revoke_main
from api.server_options import add_server_options
from api.tls_options import add_client_tls_options, cert_files, client_tls_problem
from verify.defaults import DEFAULT_TTL_SECONDS

EXIT_USAGE = 2
EXIT_NOT_ACQUIRED = 75  # EX_TEMPFAIL: held, conflict, rate limited or unreachable; try later
EXIT_LOST = 76  # the lease was lost while the command ran (it was terminated)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_CODES = f"""exit status: the command's own (128+N if it died of signal N), or
  {EXIT_USAGE}   bad usage, or the server refused the input (422/401)
  {EXIT_NOT_ACQUIRED}  not acquired: held, conflict, rate limited or server unreachable
  127 COMMAND could not be started (the lease is released)
  {EXIT_LOST}  the lease was lost during the run (the command got SIGTERM, then SIGKILL)"""


def add_lease_parser(commands: Any) -> None:
    """Register ``tenure lease run`` and ``tenure lease revoke`` on the ``tenure`` subcommands."""
    lease = commands.add_parser("lease", help="hold a lease while a command runs; revoke one")
    actions = lease.add_subparsers(dest="action", required=True)
    run = actions.add_parser(
        "run",
        help="run COMMAND while holding a lease on RESOURCE",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="tenure lease run RESOURCE [options] -- COMMAND [ARGS...]",
    )
    run.add_argument("resource", help="the resource to lease")
    add_server_options(run)
    add_client_tls_options(run)
    run.add_argument(
        "--holder",
        default=f"{socket.gethostname()}:{os.getpid()}"[:128],
        help="holder label (default host:pid)",
    )
    run.add_argument(
        "--ttl",
        type=int,
        default=DEFAULT_TTL_SECONDS,
        help="lease ttl in seconds (default %(default)s)",
    )
    run.add_argument("--wait", type=int, help="wait up to this many seconds (1..60) if held")
    run.add_argument("--capacity", type=int, help="holders allowed at once (1..1000)")
    run.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="seconds between SIGTERM and SIGKILL when the lease is lost",
    )
    run.add_argument(
        "--receipts",
        type=Path,
        metavar="DIR",
        help="save every receipt of the run as JSON files in DIR",
    )
    run.add_argument(
        "--trust",
        action="append",
        metavar="DID",
        help="verify every answer against this did:key (default: the keys the server serves)",
    )
    add_revoke_parser(actions)


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """``tenure lease run … -- COMMAND…`` split at the first ``--``: argparse cannot tell the
    command's own options from ours once a positional came first."""
    if argv[:2] != ["lease", "run"] or "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def lease_main(args: argparse.Namespace, command: list[str]) -> int:
    """Run ``tenure lease run`` (or ``revoke``); returns the exit status."""
    if args.action == "revoke":
        return revoke_main(args)
    if not command:
        print("tenure lease run: no COMMAND given after --", file=sys.stderr)
        return EXIT_USAGE
    if args.ttl < 1 or args.grace < 0:
        print("tenure lease run: --ttl must be ≥ 1 and --grace ≥ 0", file=sys.stderr)
        return EXIT_USAGE
    problem = client_tls_problem(args)
    if problem is not None:
        print(f"tenure lease run: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from api.client import Client

    tls = {"cacert": args.cacert, "cert": cert_files(args)}
    with Client(args.url, args.api_key, args.namespace, args.trust, **tls) as client:
        return _run(client, args, command)


def _run(client: Any, args: argparse.Namespace, command: list[str]) -> int:
    from api.client import InvalidRequest, LeaseLost, TenureError

    lost = threading.Event()
    more = {"capacity": args.capacity} if args.capacity else {}
    lease = client.lease(
        args.resource, args.holder, args.ttl, args.wait, on_lost=lambda _: lost.set(), **more
    )
    try:
        lease.__enter__()
    except TenureError as error:
        _save(args.receipts, [error.answer.receipt] if error.answer else [])
        print(f"tenure lease run: not acquired: {error}", file=sys.stderr)
        return EXIT_USAGE if isinstance(error, InvalidRequest) else EXIT_NOT_ACQUIRED
    status = _supervise(command, args, lease.fencing_token, lost)
    try:
        lease.__exit__(None, None, None)
    except LeaseLost as error:
        print(f"tenure lease run: lease lost: {error}", file=sys.stderr)
        status = EXIT_LOST
    except TenureError as error:
        print(f"tenure lease run: release failed, it expires by itself: {error}", file=sys.stderr)
    _save(args.receipts, lease.receipts)
    return status


def _supervise(
    command: list[str], args: argparse.Namespace, token: int, lost: threading.Event
) -> int:
    """Run the command until it ends; terminate it if the lease is lost."""
    env = {**os.environ, "TENURE_FENCING_TOKEN": str(token), "TENURE_RESOURCE": args.resource}
    started: list[subprocess.Popen[bytes]] = []
    early: list[int] = []  # signals that came before the command started: it gets them then
    # Handled before the start, so the command begins with the default disposition of each
    # (exec resets handled signals, but keeps ignored ones: a script's `tenure … &` ignores
    # SIGINT, and a shell cannot trap a signal ignored on entry).
    previous = {sig: signal.signal(sig, _forward(started, early)) for sig in FORWARDED}
    try:
        try:
            started.append(subprocess.Popen(command, env=env))
        except OSError as error:
            print(f"tenure lease run: cannot run {command[0]!r}: {error}", file=sys.stderr)
            return 127
        child = started[0]
        for signum in early:
            child.send_signal(signum)
        while child.poll() is None:
            if lost.wait(0.05):
                _terminate(child, args.grace)
                print("tenure lease run: lease lost; command terminated", file=sys.stderr)
                return EXIT_LOST
        return _status(child.returncode)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _forward(started: list[subprocess.Popen[bytes]], early: list[int]) -> Any:
    def handler(signum: int, frame: FrameType | None) -> None:
        if not started:
            early.append(signum)
        for child in started:
            if child.poll() is None:
                child.send_signal(signum)

    return handler


def _terminate(child: subprocess.Popen[bytes], grace: float) -> None:
    child.terminate()
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _status(returncode: int) -> int:
    """A signal death as the shell reports it (128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def _save(folder: Path | None, receipts: list[dict[str, Any]]) -> None:
    """Write each receipt as ``NNN-op-OUTCOME.json`` (secrets were never in a receipt); one
    that cannot be written is said on stderr, and the run's status stays the command's."""
    if folder is None:
        return
    stamp = time.strftime("%Y%m%dT%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for index, receipt in enumerate(receipts):
            data = receipt.get("data") or {}
            what = f"{data.get('op', 'answer')}-{data.get('outcome', data.get('status'))}"
            name = f"{stamp}-{index:04d}-{what}"
            atomic_write(folder / f"{name}.json", json.dumps(receipt, indent=2).encode())
    except OSError as error:
        print(f"tenure lease run: receipts not saved: {error}", file=sys.stderr)
