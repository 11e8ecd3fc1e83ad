"""``tenure apikey create|list|rotate|revoke``: API keys, each named by an id of its own.

A key's tenant is the name it was created under; ``rotate`` adds another key for that tenant,
so a leaked key can be retired by its id (``revoke sha256:…``) while its replacement works on.
The id is the first hex digits of the key's stored SHA-256, as ``list`` prints it: it names one
key and reveals nothing of it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from api.database_option import add_database_option, ledger_location

ID_PREFIX = "sha256:"
ID_SHOWN = 12
"""Hex digits of the digest ``list`` shows; ``revoke`` takes any prefix of 8 or more."""
ID_MIN = 8
EXIT_CODES = "Exit codes: 0 done; 1 no such key; 2 bad usage, no ledger, or an ambiguous NAME."


def add_parser(commands: Any) -> None:
    """Add ``apikey`` and its actions to the ``tenure`` subcommands."""
    apikey = commands.add_parser("apikey", help="manage API keys", epilog=EXIT_CODES)
    actions = apikey.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="print a new API key once; store its hash")
    create.add_argument("name", help="the tenant the key acts for")
    listing = actions.add_parser("list", help="list API keys: name, created, id (sha256:…)")
    rotate = actions.add_parser(
        "rotate",
        help="print a new key for NAME's tenant; the old keys work until revoked by their id",
        epilog=EXIT_CODES,
    )
    rotate.add_argument("name", help="the name the tenant's keys were created under")
    revoke = actions.add_parser(
        "revoke",
        help="revoke one key by its id, or NAME's only key (a running server refuses it within"
        " a second, and its queued waits are refused when they would be served)",
        epilog=EXIT_CODES,
    )
    revoke.add_argument("key", metavar="ID|NAME", help="a key's id from `list`, or its name")
    revoke.add_argument("--all", action="store_true", help="every key of NAME: cuts it off")
    for sub in (create, listing, rotate, revoke):
        sub.add_argument("--data", type=Path, default=Path("data"), help="ledger folder")
        add_database_option(sub)


def main(args: argparse.Namespace) -> int:
    """Run one ``apikey`` action on an existing ledger."""
    from api.admin_cli import missing_ledger, refuse
    from ledger.backends import open_for_reading, open_storage

    name = getattr(args, "name", None)
    if name is not None and not valid_name(name):
        return refuse(f"NAME must be 1..128 printable characters without '/' or {ID_PREFIX!r}")
    problem = missing_ledger(args)
    if problem is not None:
        return problem
    opener = open_for_reading if args.action == "list" else open_storage  # a read-only copy
    storage = opener(ledger_location(args))
    try:
        if args.action == "list":
            return _list(storage)
        if args.action == "revoke":
            return _revoke(storage, args.key, args.all)
        return _create(storage, args.name, args.action == "rotate")
    finally:
        storage.close()


def valid_name(name: str) -> bool:
    return (
        1 <= len(name) <= 128
        and name.isprintable()
        and "/" not in name
        and not name.startswith(ID_PREFIX)
    )


def key_id(digest: bytes) -> str:
    return ID_PREFIX + digest.hex()[:ID_SHOWN]


def _list(storage: Any) -> int:
    from ledger.log.text import iso

    for record in storage.api_keys():
        print(f"{record.name}\t{iso(record.created_at)}\t{key_id(record.digest)}")
    return 0


def _create(storage: Any, name: str, rotating: bool) -> int:
    """``create``, or ``rotate``: the same, for a name that must have a key already."""
    from ledger.lease.tokens import API_KEY_PREFIX, mint, secret_digest
    from ledger.storage import ApiKeyRecord

    old = [record for record in storage.api_keys() if record.name == name]
    if rotating and not old:
        print(f"tenure: no API key named {name!r} to rotate", file=sys.stderr)
        return 1
    tenant = old[0].tenant if old else name
    key = mint(API_KEY_PREFIX)
    record = ApiKeyRecord(secret_digest(key), tenant, name, time.time_ns() // 1_000_000)
    storage.add_api_key(record)
    print(key)
    shown = f"API key {key_id(record.digest)} for tenant {name!r}; shown once, stored as its hash."
    print(shown, file=sys.stderr)
    if rotating:
        ids = " ".join(key_id(r.digest) for r in old)
        print(
            f"the old key(s) work until revoked: tenure apikey revoke ID ({ids})", file=sys.stderr
        )
    return 0


def _revoke(storage: Any, wanted: str, every: bool) -> int:
    from api.admin_cli import refuse

    if wanted.startswith(ID_PREFIX):
        found, what = _by_id(storage, wanted.removeprefix(ID_PREFIX))
        if found is None:
            return refuse(f"an id is {ID_PREFIX} and {ID_MIN}..64 hex digits, as `list` shows")
    else:
        found = [record for record in storage.api_keys() if record.name == wanted]
        what = f"named {wanted!r}"
    if not found:
        print(f"tenure: no API key {what}", file=sys.stderr)
        return 1
    if len(found) > 1 and not every:
        ids = ", ".join(key_id(record.digest) for record in found)
        return refuse(
            f"{len(found)} API keys {what} ({ids}): give the id of the one to revoke,"
            " or --all to revoke every one"
        )
    revoked = [record for record in found if storage.revoke_api_key(record.digest)]
    ids = ", ".join(key_id(record.digest) for record in revoked)
    print(f"revoked {len(revoked)} API key(s) {what}: {ids}", file=sys.stderr)
    return 0


def _by_id(storage: Any, hex_prefix: str) -> tuple[list[Any] | None, str]:
    """The keys whose digest starts with ``hex_prefix`` (None: not an id)."""
    prefix = hex_prefix.lower()
    if not ID_MIN <= len(prefix) <= 64 or any(c not in "0123456789abcdef" for c in prefix):
        return None, ""
    found = [record for record in storage.api_keys() if record.digest.hex().startswith(prefix)]
    return found, f"with id {ID_PREFIX}{prefix}"
