"""The text forms of the log: RFC 3339 UTC times with milliseconds and standard base64."""

import binascii
import time
from functools import lru_cache


def iso(ms: int) -> str:
    """ISO 8601 UTC with milliseconds, the one time format of entries and answers."""
    known = _ISO.get(ms)
    if known is None:
        # A lease event formats its three instants (now, expiry, lifecycle end) five times,
        # in its entry and its answer; threads share the memo (dict operations are
        # atomic), and it starts over when full.
        if len(_ISO) >= _ISO_KEPT:
            _ISO.clear()
        seconds, millis = divmod(ms, 1000)
        known = _ISO[ms] = f"{_second(seconds)}.{millis:03d}Z"
    return known


_ISO: dict[int, str] = {}
_ISO_KEPT = 1024


@lru_cache(maxsize=256)
def _second(seconds: int) -> str:
    # An answer formats five or six times (now, expiries, lifecycle end), most of them in the
    # same few seconds; strftime+gmtime was ~5% of a lease event's CPU before this cache.
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def b64(data: bytes) -> str:
    """Standard base64, the encoding of every hash in answers, proofs and checkpoints."""
    return binascii.b2a_base64(data, newline=False).decode()  # base64.b64encode's own call
