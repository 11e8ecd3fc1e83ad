"""``tenure lease revoke RESOURCE --reason TEXT``: an operator's forced release (decisions/0011).

The command opens the ledger (``--data`` or ``--database``) beside any running server and ends
the resource's live leases — one holder's with ``--holder``/``--fencing-token`` — in one write
transaction, as a release would: waiters are served in order, the next grant gets a higher
fencing token, and each lease ended is a ``revoke`` entry naming the operator (as a pseudonym)
and the reason (in clear: it is public in the ledger). docs/decisions/0011-operator-revoke.md.
"""

from __future__ import annotations

import argparse
import getpass
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.database_option import add_database_option, ledger_location, ledger_name
from verify.defaults import DEFAULT_LIFECYCLE_SECONDS

EXIT_USAGE = 2
ANONYMOUS = "anon"  # api.tenancy.ANONYMOUS, without importing FastAPI's side
if TYPE_CHECKING:
    from ledger.storage import Storage
    from ledger.writer.revoking import Revoked

_NAMESPACE_DIGEST = re.compile(r"[0-9a-f]{32}")


def add_revoke_parser(actions: Any) -> None:
    """Register ``revoke`` on the ``tenure lease`` actions."""
    revoke = actions.add_parser(
        "revoke",
        help="operator force-release: end RESOURCE's lease(s), fence the holder, record why",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        epilog="Exit codes: 0 revoked; 1 the ledger could not be written; 2 bad usage, unknown"
        " resource or tenant, or no live lease to revoke (nothing is written).",
    )
    revoke.add_argument("resource", help="the resource's name, as its tenant leases it")
    revoke.add_argument(
        "--reason",
        required=True,
        help="why: public in the ledger, in clear: no names or secrets (1..200 printable)",
    )
    revoke.add_argument("--by", help="operator label (default: the OS user name)")
    tenant = revoke.add_mutually_exclusive_group()
    tenant.add_argument("--api-key-name", metavar="NAME", help="the tenant of this API key")
    tenant.add_argument(
        "--namespace-digest",
        metavar="HEX",
        help="a namespace tenant: the first 32 hex digits of SHA-256(namespace)",
    )
    revoke.add_argument(
        "--tenant-id", metavar="SUB", help="with --api-key-name: the body tenantId it narrows to"
    )
    revoke.add_argument("--holder", help="revoke only this holder's lease (a semaphore slot)")
    revoke.add_argument("--fencing-token", type=int, help="revoke only the lease with this token")
    revoke.add_argument("--data", type=Path, default=Path("data"), help="ledger folder")
    add_database_option(revoke)
    revoke.add_argument(
        "--keys", type=Path, default=Path("keys"), help="key folder (its pseudonym secret)"
    )
    revoke.add_argument(
        "--lifecycle",
        type=int,
        default=DEFAULT_LIFECYCLE_SECONDS,
        help="the server's --lifecycle: a waiter this revoke grants gets it (default %(default)s)",
    )
    revoke.add_argument("--json", action="store_true", help="print the outcome as JSON")


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        return "operator"


def revoke_main(args: argparse.Namespace) -> int:
    """Run ``tenure lease revoke``; 0 revoked, 1 storage failed, 2 refused (nothing written)."""
    from ledger.storage import StorageError

    if args.by is None:
        args.by = _os_user()
    problem = _check_args(args)
    if problem is not None:
        return _refuse(problem)
    try:
        return _revoke(args)
    except StorageError as error:
        print(f"tenure lease revoke: the ledger could not be written: {error}", file=sys.stderr)
        return 1


def _check_args(args: argparse.Namespace) -> str | None:
    """The first rule an argument breaks, in tenure's words, or None."""
    from verify.export_records import reason_problem

    if not _label(args.resource, 256):
        return "RESOURCE must be 1..256 printable characters"
    reason = reason_problem(args.reason)
    if reason is not None:
        return f"--reason: {reason}"
    if not _label(args.by, 128):
        return "--by must be 1..128 printable characters"
    if args.holder is not None and not _label(args.holder, 128):
        return "--holder must be 1..128 printable characters"
    if args.tenant_id is not None and (
        args.api_key_name is None or not _label(args.tenant_id, 128)
    ):
        return "--tenant-id needs --api-key-name and must be 1..128 printable characters"
    if args.fencing_token is not None and args.fencing_token < 1:
        return "--fencing-token must be a positive integer"
    digest = args.namespace_digest
    if digest is not None and not _NAMESPACE_DIGEST.fullmatch(digest.lower()):
        return "--namespace-digest must be 32 hex digits: the start of SHA-256(namespace)"
    if args.lifecycle < 1:
        return "--lifecycle must be at least 1 second"
    return None


def _label(value: str, most: int) -> bool:
    return 1 <= len(value) <= most and value.isprintable()


def _refuse(message: str) -> int:
    print(f"tenure lease revoke: {message}", file=sys.stderr)
    return EXIT_USAGE


def _revoke(args: argparse.Namespace) -> int:
    from ledger.backends import open_storage, storage_exists
    from ledger.keys.keyring import NAMES_KEY, PSEUDONYM_SECRET, load_or_create_names_key
    from ledger.keys.names import NameCodec
    from ledger.storage import StorageError

    location = ledger_location(args)
    if not storage_exists(location):
        return _refuse(f"no ledger in {ledger_name(args)} (give the one `tenure serve` uses)")
    secret_file = args.keys / PSEUDONYM_SECRET
    if not secret_file.is_file():
        return _refuse(f"no {PSEUDONYM_SECRET} in {args.keys} (give `tenure serve --keys`)")
    names_file = args.keys / NAMES_KEY
    if not names_file.is_file():
        return _refuse(f"no {NAMES_KEY} in {args.keys} (give `tenure serve --keys`)")
    try:
        storage = open_storage(location, names=NameCodec(load_or_create_names_key(args.keys)))
    except StorageError as error:
        return _refuse(f"cannot open the ledger: {error}")
    try:
        tenant = _tenant(storage, args)
        return _decide(storage, secret_file.read_bytes(), tenant, args)
    finally:
        storage.close()


def _tenant(storage: Storage, args: argparse.Namespace) -> str:
    """The tenant as api/tenancy.py names it: ``key/…``, ``ns/…`` or the anonymous one."""
    if args.namespace_digest is not None:
        return "ns/" + str(args.namespace_digest).lower()
    if args.api_key_name is None:
        return ANONYMOUS
    found = [key.tenant for key in storage.api_keys() if key.name == args.api_key_name]
    tenant = "key/" + (found[0] if found else args.api_key_name)  # a key's tenant is its name
    return tenant if args.tenant_id is None else f"{tenant}/{args.tenant_id}"


def _decide(storage: Storage, secret: bytes, tenant: str, args: argparse.Namespace) -> int:
    from ledger.lease.calls import Limits, now_ms
    from ledger.storage import StorageError
    from ledger.writer.revoking import RevokeOrder, run_revoke

    order = RevokeOrder(
        tenant, args.resource, args.by, args.reason, args.holder, args.fencing_token
    )
    limits = Limits(lifecycle_seconds=args.lifecycle)
    try:
        cluster = _cluster(args, secret)
    except StorageError as error:  # another keys folder than the ledger's nodes use
        return _refuse(f"cannot join the ledger's nodes: {error}")
    try:
        notify = cluster.notify
        revoked = run_revoke(storage, secret, order, now_ms(), limits, notify)
    finally:
        cluster.close()
    if not revoked.known:
        return _refuse(f"no lease was ever granted on {args.resource!r} for {_who(args)}")
    if not revoked.tokens:
        which = "" if args.holder is None and args.fencing_token is None else " matching"
        return _refuse(f"no live{which} lease on {args.resource!r} for {_who(args)}: not held")
    _report(revoked, args)
    return 0


def _cluster(args: argparse.Namespace, secret: bytes) -> Any:
    """The ledger's membership (a SQLite folder's or the PostgreSQL nodes'), to wake at once
    the waiter of another process that the revoke granted."""
    from ledger.backends import open_membership
    from ledger.keys.keyring import keys_fingerprint

    return open_membership(ledger_location(args), keys_fingerprint(secret))


def _who(args: argparse.Namespace) -> str:
    if args.namespace_digest is not None:
        return f"namespace digest {args.namespace_digest.lower()}"
    if args.api_key_name is not None:
        sub = "" if args.tenant_id is None else f", tenantId {args.tenant_id!r}"
        return f"API key name {args.api_key_name!r}{sub}"
    return "the anonymous tenant"


def _report(revoked: Revoked, args: argparse.Namespace) -> None:
    data = {
        "resource": args.resource,
        "revoked": [
            {"holder": holder, "fencingToken": token, "ledgerIndex": index}
            for holder, token, index in zip(
                revoked.holders, revoked.tokens, revoked.indexes, strict=True
            )
        ],
        "nextFencingToken": revoked.next_token,
        "revokedBy": revoked.operator,
        "treeSize": revoked.tree_size,
    }
    if args.json:
        print(json.dumps(data, indent=2))
        return
    for item in data["revoked"]:
        print(
            f"revoked {args.resource!r} from {item['holder']!r}: fencing token"
            f" {item['fencingToken']}, ledger entry {item['ledgerIndex']}"
        )
    print(
        f"the next grant gets fencing token {revoked.next_token} or more;"
        f" the ledger names you {revoked.operator[:16]}…",
        file=sys.stderr,
    )
