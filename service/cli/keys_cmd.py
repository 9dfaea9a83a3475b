"""``omtl keys``: create, list and revoke API keys, straight in Redis (``REDIS_URL``).

Without ``REDIS_URL`` it uses the embedded server of a running ``omtl up`` on
the same data directory (``OMTL_DATA_DIR``).

See docs/architecture.md, "Authentication and roles". ``omtl keys create``
prints the new key once (only its hash is stored); ``omtl keys token`` prints a
fresh key without storing it, for ``OMTL_BOOTSTRAP_ADMIN_KEY_FILE`` secrets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from service.auth import Role
from service.auth.store import create_key, list_keys, record_audit, revoke_key
from service.auth.tokens import new_token
from service.cli.redis_cli_cmd import server_url
from service.store import STORE_UNAVAILABLE, AsyncStore, connect_async

__all__ = ["COMMANDS", "register"]

#: The actor of key changes made with this command (whoever can reach Redis).
CLI_ACTOR = "omtl-keys"


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "keys": "manage API keys (in the Redis at REDIS_URL)",
}


def register(sub: Any) -> None:
    """Add ``omtl keys create|list|revoke|token``."""
    keys = sub.add_parser("keys", help=COMMANDS["keys"])
    actions = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)

    create = actions.add_parser("create", help="create a key and print it (shown once)")
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    create.add_argument(
        "--model", action="append", help="limit the key to this model (repeatable; default: all)"
    )
    create.add_argument(
        "--name", help="unique name, recorded in the audit trail (default key-<id>)"
    )
    create.add_argument("--json", action="store_true", help="print the key and its record as JSON")
    create.set_defaults(func=_run(_create))

    listing = actions.add_parser("list", help="list the live keys (never the keys themselves)")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(func=_run(_list))

    revoke = actions.add_parser("revoke", help="revoke a key by id or name")
    revoke.add_argument("key", help="the key's id (12 hex digits) or name")
    revoke.set_defaults(func=_run(_revoke))

    token = actions.add_parser("token", help="print a fresh key without storing it")
    token.set_defaults(func=lambda args: print(new_token()) or 0)


def _run(
    action: Callable[[AsyncStore, argparse.Namespace], Awaitable[int]],
) -> Callable[[argparse.Namespace], int]:
    """A subcommand running ``action`` with a client of ``REDIS_URL``."""

    def run(args: argparse.Namespace) -> int:
        url = _redis_url()
        if not url:
            print(
                "omtl keys needs REDIS_URL (the server the API uses), or a running `omtl up`",
                file=sys.stderr,
            )
            return 2

        async def main() -> int:
            client = connect_async(url)
            try:
                return await action(client, args)
            finally:
                await client.aclose()

        try:
            return asyncio.run(main())
        except ValueError as exc:
            print(f"omtl keys: {exc}", file=sys.stderr)
            return 1
        except STORE_UNAVAILABLE as exc:
            print(f"omtl keys: Redis is unavailable: {exc}", file=sys.stderr)
            return 1

    return run


def _redis_url() -> str | None:
    """``REDIS_URL``, else the URL `omtl up` wrote next to its embedded server."""
    return server_url()


async def _create(client: AsyncStore, args: argparse.Namespace) -> int:
    token, record = await create_key(client, args.role, args.name, args.model)
    await record_audit(client, CLI_ACTOR, "key.create", record.name, id=record.key_id)
    if args.json:
        print(json.dumps({**record.public(), "key": token}))
    else:
        scope = ", ".join(record.models) if record.models else "every model"
        print(token)
        print(
            f"# {record.name} ({record.role.value}, {scope}); shown once, store it now",
            file=sys.stderr,
        )
    return 0


async def _list(client: AsyncStore, args: argparse.Namespace) -> int:
    records = [r.public() for r in await list_keys(client)]
    if args.json:
        print(json.dumps(records))
        return 0
    print(f"{'id':<12}  {'name':<24}  {'role':<9}  models")
    for r in records:
        models = ",".join(r["models"]) if r["models"] else "*"
        print(f"{r['id']:<12}  {r['name']:<24}  {r['role']:<9}  {models}")
    return 0


async def _revoke(client: AsyncStore, args: argparse.Namespace) -> int:
    record = await revoke_key(client, args.key)
    if record is None:
        print(f"omtl keys: no live key with the id or name {args.key!r}", file=sys.stderr)
        return 1
    await record_audit(client, CLI_ACTOR, "key.revoke", record.name, id=record.key_id)
    print(f"revoked {record.key_id} ({record.name})")
    return 0
