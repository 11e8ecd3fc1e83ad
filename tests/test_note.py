"""Signed checkpoints: ledger/log/checkpoint.py signs, verify/note.py verifies (C2SP signed-note).

Besides the round trip, the note is read the way an independent C2SP client would (split at the
last blank line, em-dash signature lines, Ed25519 over the text bytes), and the whole scheme is
pinned to the reference example of golang.org/x/mod/sumdb/note, reproduced byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.log.checkpoint import checkpoint_body, sign_note
from verify.errors import MalformedInput, SignatureError, VerificationError
from verify.note import (
    Checkpoint,
    key_id,
    parse_checkpoint,
    parse_note,
    parse_vkey,
    verify_note,
    vkey,
)

NAME = "tenure.example/log"
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUB = KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
ROOT = hashlib.sha256(b"some root").digest()
BODY = checkpoint_body(NAME, 1234, ROOT)
NOTE = sign_note(BODY, NAME, KEY)

# golang.org/x/mod/sumdb/note, package documentation and note_test.go.
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT + "\n— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNX"
    "gKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def test_round_trip() -> None:
    assert BODY.split("\n") == [NAME, "1234", base64.b64encode(ROOT).decode(), ""]
    assert verify_note(NOTE, NAME, PUB) == BODY
    assert parse_checkpoint(BODY) == Checkpoint(NAME, 1234, ROOT, ())


def test_read_as_an_independent_c2sp_client() -> None:
    text, _, block = NOTE.rpartition("\n\n")
    text += "\n"
    lines = block.removesuffix("\n").split("\n")
    assert len(lines) == 1
    m = re.fullmatch(r"\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})", lines[0])
    assert m is not None and m[1] == NAME
    raw = base64.b64decode(m[2])
    # Key ID per c2sp.org/signed-note, computed here from the spec's formula, not the module's.
    want_id = hashlib.sha256(NAME.encode() + b"\x0a" + b"\x01" + PUB).digest()[:4]
    assert raw[:4] == want_id == key_id(NAME, PUB)
    Ed25519PublicKey.from_public_bytes(PUB).verify(raw[4:], text.encode())
    origin, size, root = text.removesuffix("\n").split("\n")
    assert (origin, int(size), base64.b64decode(root)) == (NAME, 1234, ROOT)
    key_b64 = base64.b64encode(b"\x01" + PUB).decode()
    assert vkey(NAME, PUB) == f"{NAME}+{want_id.hex()}+{key_b64}"


def test_go_reference_note_byte_for_byte() -> None:
    name, public = parse_vkey(GO_VKEY)
    assert (name, key_id(name, public).hex()) == ("PeterNeumann", "c74f20a3")
    assert vkey(name, public) == GO_VKEY
    assert verify_note(GO_NOTE, name, public) == GO_TEXT
    seed = base64.b64decode(GO_SKEY.split("+", 4)[4])[1:]  # PRIVATE+KEY+name+id+(0x01 ‖ seed)
    assert sign_note(GO_TEXT, name, Ed25519PrivateKey.from_private_bytes(seed)) == GO_NOTE


@pytest.mark.parametrize("mask", [0x01, 0x80])
def test_any_flipped_byte_is_rejected(mask: int) -> None:
    encoded = NOTE.encode()
    for i in range(len(encoded)):
        flipped = encoded[:i] + bytes([encoded[i] ^ mask]) + encoded[i + 1 :]
        with pytest.raises(VerificationError):
            verify_note(flipped, NAME, PUB)


def test_wrong_key_is_rejected() -> None:
    other = Ed25519PrivateKey.from_private_bytes(bytes(32))
    other_pub = other.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    with pytest.raises(SignatureError):
        verify_note(NOTE, NAME, other_pub)  # no signature under that key ID
    with pytest.raises(SignatureError):
        verify_note(NOTE, "another.example/log", PUB)
    # The right name and key ID, but a signature made by another key.
    forged_sig = base64.b64encode(key_id(NAME, PUB) + other.sign(BODY.encode())).decode()
    with pytest.raises(SignatureError):
        verify_note(f"{BODY}\n— {NAME} {forged_sig}\n", NAME, PUB)


def test_other_signers_are_ignored() -> None:
    witness = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)
    cosigned = NOTE + sign_note(BODY, "witness.example", witness).split("\n\n")[1]
    assert len(parse_note(cosigned).signatures) == 2
    assert verify_note(cosigned, NAME, PUB) == BODY


@pytest.mark.parametrize(
    "body",
    [
        "origin\n1\n" + base64.b64encode(ROOT).decode(),  # no final newline
        "origin\n1\n",  # no root line
        "\n1\n" + base64.b64encode(ROOT).decode() + "\n",  # empty origin
        "origin\n01\n" + base64.b64encode(ROOT).decode() + "\n",  # leading zero
        "origin\n-1\n" + base64.b64encode(ROOT).decode() + "\n",
        "origin\n18446744073709551616\n" + base64.b64encode(ROOT).decode() + "\n",
        "origin\n1\n" + base64.b64encode(ROOT[:31]).decode() + "\n",  # short hash
        "origin\n1\n" + base64.urlsafe_b64encode(b"\xff" * 32).decode() + "\n",  # not std
        "origin\n1\n" + base64.b64encode(ROOT).decode() + "\n\next\n",  # empty extension
    ],
)
def test_malformed_checkpoints(body: str) -> None:
    with pytest.raises(MalformedInput):
        parse_checkpoint(body)


def test_extension_lines_and_size_zero() -> None:
    body = checkpoint_body("o", 0, ROOT, ["ext one", "ext two"])
    assert parse_checkpoint(body) == Checkpoint("o", 0, ROOT, ("ext one", "ext two"))


@pytest.mark.parametrize(
    "note",
    [
        BODY,  # unsigned
        BODY + "\n",  # blank line, no signatures
        BODY + "\n- " + NOTE.rsplit("— ", 1)[1],  # ASCII hyphen instead of the em dash
        NOTE.removesuffix("\n"),
        NOTE.replace("\n", "\r\n"),
    ],
)
def test_malformed_notes(note: str) -> None:
    with pytest.raises(MalformedInput):
        verify_note(note, NAME, PUB)


@pytest.mark.parametrize("name", ["", "a+b", "a b", "a\tb"])
def test_invalid_key_names(name: str) -> None:
    with pytest.raises(MalformedInput):
        key_id(name, PUB)
    with pytest.raises(ValueError):
        sign_note(BODY, name, KEY)


def test_signer_refuses_bad_bodies() -> None:
    for body in ["no newline", "a\n\nb\n", "a\x07\n"]:
        with pytest.raises(ValueError):
            sign_note(body, NAME, KEY)
    with pytest.raises(ValueError):
        checkpoint_body("o", 1, ROOT[:31])
    with pytest.raises(ValueError):
        checkpoint_body("o\nx", 1, ROOT)
