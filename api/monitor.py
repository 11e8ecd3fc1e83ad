"""`tenure monitor URL`: the I/O around ``verify.monitor`` — HTTP, the state file, the clock.

Each round fetches the latest checkpoint, the consistency proof from the one seen before and the
new entries (1000 a page), lets :class:`verify.monitor.Monitor` check them, then replaces the
state file atomically (write, fsync, rename, fsync the folder) when it changed, so a monitor
killed at any point resumes from the last checkpoint it sealed. With a cosigning key it adds a
C2SP cosignature/v1 to a checkpoint without lease findings, if it is consistent with everything
that key cosigned before (``api/witness.py``). Reads are bounded (``api/monitor_log.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.files import atomic_write
from api.monitor_log import Log, Unavailable, advance
from api.monitor_report import Reporter
from api.tls_options import add_client_tls_options, client_tls_problem
from api.witness_server import listen_address
from verify import ijson
from verify.errors import MalformedInput
from verify.monitor import Monitor
from verify.monitor_state import Finding, MonitorState, Seen, Violation, proof_hashes

if TYPE_CHECKING:
    from api.witness import Witness

EXIT_CLEAN, EXIT_VIOLATION, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3
EPILOG = """\
Trust: --trust/--keys name the log's keys; without them the keys pinned in the state file are
used, and on the very first run the keys the log publishes (GET /api/v1/keys) are pinned
(trust on first use: the run says so).

exit codes:
  0  every checkpoint verified (with --once), or stopped by SIGINT/SIGTERM
  1  a violation was found and reported: a bad signature, a rollback, a split view or rewritten
     history (both signed checkpoints as evidence), entries that do not hash to the signed root,
     or a lease-invariant violation (as `tenure audit` reports them), or a checkpoint
     inconsistent with one the --cosign-key cosigned before
  2  bad usage, or an unreadable state, keyring, cosigning key file or witness memory
  3  the log could not be reached, answered out of protocol, too slowly or too much (with
     --once; otherwise retried)
"""


def add_parser(commands: Any) -> None:
    """Register `tenure monitor` on the CLI's subcommands."""
    parser = commands.add_parser(
        "monitor",
        help="follow a log: verify each checkpoint, its consistency and entries; cosign",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("url", help="the log's base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--state", type=Path, help="state file to resume from (JSON)")
    parser.add_argument("--json", action="store_true", help="one JSON object per event")
    parser.add_argument("--once", action="store_true", help="check up to the latest, then exit")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between rounds")
    parser.add_argument(
        "--request-timeout", type=_seconds, default=30.0, help="seconds for one whole answer"
    )
    parser.add_argument(
        "--round-timeout", type=_seconds, default=600.0, help="seconds for one whole round"
    )
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument("--trust", action="append", metavar="DID", help="a trusted did:key")
    trust.add_argument("--keys", type=Path, metavar="FILE", help="trust a GET /api/v1/keys")
    parser.add_argument("--cosign-key", type=Path, metavar="FILE", help="Ed25519 PEM (created)")
    parser.add_argument("--cosign-name", default="tenure-monitor", help="cosigner key name")
    parser.add_argument("--cosign-dir", type=Path, help="where cosigned checkpoints go")
    parser.add_argument(
        "--listen", type=listen_address, metavar="HOST:PORT", help="serve as a C2SP tlog-witness"
    )
    add_client_tls_options(parser, mutual=False)


def run(args: argparse.Namespace) -> int:
    """Run the monitor; the exit code is the documented one."""
    import httpx  # only this command needs an HTTP client (the `monitor` extra)

    if args.listen is not None and args.cosign_key is None:
        print("tenure monitor: --listen needs --cosign-key (the witness's key)", file=sys.stderr)
        return EXIT_USAGE

    from api.client.tls import tls_verify

    if problem := client_tls_problem(args):
        print(f"tenure monitor: {problem}", file=sys.stderr)
        return EXIT_USAGE
    out = Reporter(sys.stdout, args.json)
    url, tls = args.url.rstrip("/"), tls_verify(args.cacert, None)
    with httpx.Client(base_url=url, timeout=args.request_timeout, verify=tls) as client:
        log = Log(client, args.request_timeout)
        log.start_round(args.round_timeout)
        try:
            state, how = load_state(args, log)
            witness = None
            if args.cosign_key is not None:
                from api.witness import Witness  # ledger.keys.keyring: not on the audit's path

                witness = Witness.open(args.cosign_key, args.cosign_name, _cosign_dir(args))
        except (OSError, ValueError, MalformedInput) as e:
            print(f"tenure monitor: {e}", file=sys.stderr)
            return EXIT_USAGE
        except Unavailable as e:
            out.event("unavailable", message=str(e))
            return EXIT_UNAVAILABLE
        out.event("start", url=args.url, treeSize=_size(state), trust=how, trusted=state.trusted)
        if args.listen is not None and witness is not None:
            from api.witness_server import run_witness

            return run_witness(Loop(log, state, args, out, witness), witness, args.listen)
        return Loop(log, state, args, out, witness).run()


class Loop:
    def __init__(
        self,
        log: Log,
        state: MonitorState,
        args: argparse.Namespace,
        out: Reporter,
        witness: Witness | None,
    ) -> None:
        self.log, self.state, self.args, self.out, self.witness = log, state, args, out, witness
        self.saved = False
        """Whether this process wrote the state file yet (later, only a grown tree is)."""
        exists = args.state is not None and args.state.exists()
        self.on_disk = state.as_data() if exists else None

    def run(self) -> int:
        signal.signal(signal.SIGTERM, _stop)
        try:
            while True:
                code = self.round()
                if code in (EXIT_VIOLATION, EXIT_USAGE) or self.args.once:
                    return code
                time.sleep(self.args.interval)
        except KeyboardInterrupt:
            return EXIT_CLEAN

    def round(self) -> int:
        self.log.start_round(self.args.round_timeout)
        before = self.state.as_data()  # a failed round leaves the sealed state as it was
        monitor = Monitor(self.state)
        fresh = self.state.seen is None
        try:
            new, found, added = advance(monitor, self.log)
            cosigned = self.witness is not None and not found and (added > 0 or fresh)
            if cosigned and self.witness is not None:
                self.witness.cosign(new, int(time.time()), self.proof)
        except Violation as v:
            self.state = MonitorState.from_data(before)
            self.out.event("violation", **v.finding.as_data())
            return EXIT_VIOLATION
        except (Unavailable, MalformedInput) as e:
            self.state = MonitorState.from_data(before)
            self.out.event("unavailable", message=str(e))
            return EXIT_UNAVAILABLE
        except (OSError, ValueError) as e:
            print(f"tenure monitor: {e}", file=sys.stderr)
            return EXIT_USAGE
        for finding in found:
            self.out.event("violation", **finding.as_data())
        return self.finish(new, added, fresh, cosigned, found)

    def finish(
        self, new: Seen, added: int, fresh: bool, cosigned: bool, found: list[Finding]
    ) -> int:
        """Save a changed state, say what the round did; the round's exit code."""
        try:
            if self.args.state is not None and (added or not self.saved):
                if added or self.state.as_data() != self.on_disk:
                    save_state(self.args.state, self.state)
                self.saved = True
        except OSError as e:
            print(f"tenure monitor: {e}", file=sys.stderr)
            return EXIT_USAGE
        if added or fresh or self.args.once:  # a quiet round prints nothing
            self.out.checkpoint(new, added, cosigned)
        return EXIT_VIOLATION if found else EXIT_CLEAN

    def proof(self, first: int, second: int) -> list[bytes]:
        """The log's consistency proof between two sizes, for the witness's own check."""
        data = self.log.get("/api/v1/log/proof/consistency", first=first, second=second)
        return proof_hashes(data)


def load_state(args: argparse.Namespace, log: Log) -> tuple[MonitorState, str]:
    """The saved state (or a new one) with the trusted keys the arguments or state name."""
    state = None
    if args.state is not None and args.state.exists():
        try:
            state = MonitorState.from_data(json.loads(args.state.read_text(encoding="utf-8")))
        except (ValueError, MalformedInput) as e:
            raise ValueError(f"{args.state}: {e}") from e
    if args.trust:
        trusted, how = list(args.trust), "--trust"
    elif args.keys is not None:
        trusted, how = keyring_dids(ijson.loads(args.keys.read_bytes(), str(args.keys))), "--keys"
    elif state is not None:
        trusted, how = state.trusted, "state file"
    else:
        trusted, how = keyring_dids(log.get("/api/v1/keys")), "first use (the log's own keys)"
    state = state or MonitorState(trusted)
    state.trusted = trusted
    try:
        Monitor(state)  # the keys are well-formed did:keys
    except MalformedInput as e:
        raise ValueError(f"trusted keys: {e}") from e
    return state, how


def keyring_dids(keyring: Any) -> list[str]:
    """The dids of ``{"keys": [{"did": …}, …]}`` (GET /api/v1/keys)."""
    keys = keyring.get("keys") if isinstance(keyring, dict) else None
    dids = [k.get("did") for k in keys if isinstance(k, dict)] if isinstance(keys, list) else []
    if not dids or not all(isinstance(did, str) for did in dids):
        raise ValueError('a keyring is {"keys": [{"did": …}, …]}, as GET /api/v1/keys answers')
    return [str(did) for did in dids]


def save_state(path: Path, state: MonitorState) -> None:
    """Replace ``path`` atomically and durably: a crash leaves the old state or the new one."""
    atomic_write(path, json.dumps(state.as_data(), indent=1).encode() + b"\n")


def _size(state: MonitorState) -> int:
    return 0 if state.seen is None else state.seen.size


def _cosign_dir(args: argparse.Namespace) -> Path:
    if args.cosign_dir is not None:
        return Path(args.cosign_dir)
    return Path(f"{args.state}.cosigned") if args.state is not None else Path("cosigned")


def _seconds(text: str) -> float:
    """A number of seconds above 0 and under a week, or argparse's error naming the option."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 86400 * 7:
        raise argparse.ArgumentTypeError(f"seconds above 0 and under a week, not {text!r}")
    return value


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # state files are replaced atomically: stopping anywhere is safe
