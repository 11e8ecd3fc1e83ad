"""libsodium's Ed25519 signing, called without releasing the interpreter lock (issue 10).

PyNaCl's binding (cffi) releases the interpreter lock around every call into libsodium. For a
~30 µs signature that is a loss wherever another thread wants the lock — the server's writer
thread often does: the event loop gives the lock away, the writer runs, and the loop waits to
get it back, a hand-off and a wake-up each way. Measured (docs/performance.md, sixth round): in
``bench/lease_profile.py --fresh`` signing took 85–92 µs of the event loop's CPU per answer
through cffi and 44–46 µs with the lock held (the process's CPU per event 670–704 → 523–584 µs);
in the default server under wrk, where uvloop hands the lock over between I/O callbacks anyway,
55 → 48 µs per answer.

So the signature is made by the same libsodium — the one PyNaCl carries in its extension module,
whose symbols it exports — through :class:`ctypes.PyDLL`, which keeps the lock for the call.
Where that library cannot be loaded (another build of PyNaCl), PyNaCl's own binding signs.
Ed25519 is deterministic: either way the same 64 bytes (``tests/test_fast_signing.py``).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

SIGNATURE_BYTES = 64

Sign = Callable[[bytes, bytes], bytes]
"""``sign(message, key)``: the Ed25519 signature of ``message`` under libsodium's 64-byte key."""


def _through_cffi(message: bytes, key: bytes) -> bytes:
    from nacl.bindings import crypto_sign

    signed: bytes = crypto_sign(message, key)  # signature ‖ message
    return signed[:SIGNATURE_BYTES]


def _holding_the_lock() -> Sign | None:
    """A signer through ``ctypes.PyDLL`` on PyNaCl's libsodium, or None if it has none to lend."""
    try:
        import nacl.bindings  # noqa: F401 - runs sodium_init, as libsodium requires first
        from nacl import _sodium

        library = ctypes.PyDLL(_sodium.__file__)
        detached = library.crypto_sign_detached
    except (ImportError, OSError, AttributeError):
        return None
    detached.argtypes = [
        ctypes.c_char_p,  # the signature's 64 bytes
        ctypes.c_void_p,  # its length (NULL: not wanted)
        ctypes.c_char_p,
        ctypes.c_ulonglong,
        ctypes.c_char_p,  # the secret key: seed ‖ public key
    ]
    detached.restype = ctypes.c_int

    def sign(message: bytes, key: bytes) -> bytes:
        if len(key) != SIGNATURE_BYTES:  # libsodium would read past a shorter one
            raise ValueError("a libsodium Ed25519 secret key is 64 bytes")
        signature = ctypes.create_string_buffer(SIGNATURE_BYTES)
        if detached(signature, None, message, len(message), key) != 0:
            raise RuntimeError("libsodium could not sign")
        return signature.raw

    return sign


def signer() -> tuple[Sign, bool] | None:
    """libsodium's signing function and whether it keeps the interpreter lock; None without
    PyNaCl (the server's extra)."""
    try:
        import nacl.bindings  # noqa: F401
    except ImportError:
        return None
    held = _holding_the_lock()
    return (held, True) if held is not None else (_through_cffi, False)
