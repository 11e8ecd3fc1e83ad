"""`tenure monitor --listen`: the monitor as a C2SP tlog-witness (https://c2sp.org/tlog-witness).

``POST /add-checkpoint`` takes ``old <size>``, the consistency proof lines, a blank line and the
log's signed checkpoint, and answers this witness's cosignature/v1 line. Refusals are the spec's:
400 malformed, 404 another origin, 403 no valid signature by a trusted log key, 409 (body: the
size last cosigned, ``text/x.tlog.size``) when ``old`` is not that size or the same size has
another root, 422 a proof that does not verify. Before cosigning, the monitor reads the entries
up to the checkpoint from the log and checks the lease rules (as a monitor round does); a log
with any lease finding is never cosigned again (422). Requests are served one at a time, and
the memory beside the key (``api/witness.py``) is checked and replaced under its lock."""

from __future__ import annotations

import argparse
import base64
import binascii
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING

from api.monitor_log import Unavailable, advance
from verify.errors import MalformedInput, ProofError, SignatureError
from verify.monitor import Monitor
from verify.monitor_state import MonitorState, Seen, Violation, seen_of
from verify.multikey import public_key_from_did
from verify.note import verify_note
from verify.rfc9162 import verify_consistency

if TYPE_CHECKING:
    from api.monitor import Loop
    from api.witness import Witness

MAX_BODY = 64 * 1024
MAX_PROOF = 63  # tlog-witness: a client sends at most 63 proof lines
_OLD = re.compile(r"old (0|[1-9][0-9]{0,19})")
TEXT, SIZE = "text/plain; charset=utf-8", "text/x.tlog.size"
CHECKPOINT = "/api/v1/log/checkpoint"


class Refused(Exception):
    """An answer other than 200: its status and body."""

    def __init__(self, status: int, message: str, content_type: str = TEXT) -> None:
        super().__init__(message)
        self.status, self.message, self.content_type = status, message, content_type


@dataclass(frozen=True)
class Submission:
    old: int
    proof: list[bytes]
    note: str


def parse_submission(body: bytes) -> Submission:
    """The request body of add-checkpoint (Refused 400 if it is not one)."""
    try:
        text = body.decode()
    except UnicodeDecodeError as e:
        raise Refused(400, "the body is not UTF-8") from e
    head, sep, note = text.partition("\n\n")
    lines = head.split("\n")
    match = _OLD.fullmatch(lines[0])
    if not sep or match is None:
        raise Refused(400, "the body starts with 'old <size>', proof lines and a blank line")
    if len(lines) - 1 > MAX_PROOF:
        raise Refused(400, f"more than {MAX_PROOF} consistency proof lines")
    try:
        proof = [base64.b64decode(line, validate=True) for line in lines[1:]]
    except (binascii.Error, ValueError) as e:
        raise Refused(400, "a consistency proof line is not base64") from e
    if any(len(h) != 32 for h in proof):
        raise Refused(400, "a consistency proof line is not a 32-byte hash")
    return Submission(int(match.group(1)), proof, note)


class WitnessService:
    """add-checkpoint for the one log a monitor follows, cosigning with its key."""

    def __init__(
        self, loop: Loop, witness: Witness, origin: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.loop, self.witness, self.origin, self.clock = loop, witness, origin, clock

    def add_checkpoint(self, body: bytes) -> str:
        """The cosignature line for a submitted checkpoint, or :class:`Refused`."""
        sub = parse_submission(body)
        new = self._signed(sub.note)
        last = self.witness.cosigned().get(self.origin)
        check_submission(sub, new, last)
        self._lease_rules(new)
        try:
            cosigned = self.witness.cosign(new, int(self.clock()), lambda a, b: sub.proof)
        except Violation as v:
            raise Refused(409, v.finding.message) from v
        self.loop.out.event("cosigned", origin=new.origin, treeSize=new.size)
        return cosigned[len(new.note) :]

    def _signed(self, note: str) -> Seen:
        try:
            new = seen_of({"note": note})
        except MalformedInput as e:
            raise Refused(400, f"the checkpoint is not a signed note: {e}") from e
        if new.origin != self.origin:
            raise Refused(404, f"unknown origin {new.origin!r}")
        for did in self.loop.state.trusted:
            try:
                verify_note(note, new.origin, public_key_from_did(did).public_bytes_raw())
                return new
            except (SignatureError, MalformedInput):
                continue
        raise Refused(403, "no trusted key of this log signs the checkpoint")

    def _lease_rules(self, new: Seen) -> None:
        """Read the entries up to ``new`` from the log and check them as a monitor round does."""
        loop = self.loop
        loop.log.start_round(loop.args.round_timeout)
        before = loop.state.as_data()
        monitor, fresh = Monitor(loop.state), loop.state.seen is None
        try:
            _, found, added = advance(monitor, loop.log, new)
        except Violation as v:
            loop.state = MonitorState.from_data(before)
            loop.out.event("violation", **v.finding.as_data())
            raise Refused(422, v.finding.message) from v
        except (Unavailable, MalformedInput) as e:
            loop.state = MonitorState.from_data(before)
            raise Refused(503, f"the log's entries could not be read: {e}") from e
        loop.finish(new, added, fresh, False, found)
        if loop.state.findings:
            raise Refused(422, "the log's entries break the lease rules: it is not cosigned")


def check_submission(sub: Submission, new: Seen, last: Seen | None) -> None:
    """The tlog-witness checks of ``old`` and the proof against the last cosigned checkpoint."""
    if sub.old > new.size:
        raise Refused(400, f"old size {sub.old} is larger than the checkpoint's {new.size}")
    last_size = 0 if last is None else last.size
    if sub.old != last_size:
        raise Refused(409, f"{last_size}\n", SIZE)
    if last is None or sub.old == 0:
        if sub.proof:
            raise Refused(400, "the consistency proof must be empty when old is 0")
        return
    if sub.old == new.size:
        if new.root != last.root:
            raise Refused(409, f"{last_size}\n", SIZE)
        return
    try:
        verify_consistency(last.size, new.size, last.root, new.root, sub.proof)
    except (ProofError, MalformedInput) as e:
        raise Refused(422, f"the consistency proof does not verify: {e}\n") from e


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT to listen on (argparse type: its error names the option)."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


def run_witness(loop: Loop, witness: Witness, listen: tuple[str, int]) -> int:
    """Serve add-checkpoint until SIGINT/SIGTERM; the origin is the log's (state or served)."""
    seen = loop.state.seen
    try:
        origin = seen.origin if seen is not None else seen_of(loop.log.get(CHECKPOINT)).origin
        server = serve(WitnessService(loop, witness, origin), *listen)
    except (Unavailable, MalformedInput) as e:
        loop.out.event("unavailable", message=str(e))
        return 3
    except OSError as e:
        print(f"tenure monitor: --listen {listen[0]}:{listen[1]}: {e}", file=sys.stderr)
        return 3
    url = f"http://{listen[0]}:{server.server_port}"
    loop.out.event("witness", origin=origin, url=url, vkey=witness.vkey())
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 0
    finally:
        server.server_close()
    return 0


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # the memory and state are replaced atomically: stopping is safe


def serve(service: WitnessService, host: str, port: int) -> HTTPServer:
    """An HTTP server answering add-checkpoint one request at a time (not yet serving)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/").rsplit("/", 1)[-1] != "add-checkpoint":
                return self._answer(404, TEXT, "only POST /add-checkpoint is served")
            length = self.headers.get("Content-Length", "")
            if not length.isdigit() or int(length) > MAX_BODY:
                return self._answer(413, TEXT, f"a body of at most {MAX_BODY} bytes, sized")
            body = self.rfile.read(int(length))
            try:
                line = service.add_checkpoint(body)
            except Refused as r:
                return self._answer(r.status, r.content_type, r.message)
            except (OSError, ValueError) as e:  # the memory or the key's folder: say it, cosign not
                print(f"tenure monitor: {e}", file=sys.stderr)
                return self._answer(500, TEXT, "the witness cannot read or write its memory")
            self._answer(200, TEXT, line)

        def _answer(self, status: int, content_type: str, text: str) -> None:
            data = (text if text.endswith("\n") else text + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the monitor reports events itself

    return HTTPServer((host, port), Handler)
