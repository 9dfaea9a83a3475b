"""API key records and the audit stream in Redis (docs/architecture.md, "Authentication and roles").

One hash holds every key, by id: a JSON record of the key's name, role, models
(null: all) and the SHA-256 of the key; a second hash maps names to ids (names
are unique, since the audit trail records them). Revoking a key removes both
entries, adds the id to the revoked set and bumps the revocation counter that
every API process polls. The functions take an asyncio client: the API calls
them on its event loop, the ``omtl keys`` command through ``asyncio.run``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

import orjson

from service.auth.roles import Principal, Role
from service.auth.tokens import hash_token, new_token, token_id
from service.store import AsyncStore, keys

__all__ = [
    "AUDIT_MAXLEN",
    "KeyRecord",
    "create_key",
    "ensure_bootstrap_key",
    "get_key",
    "list_keys",
    "read_audit",
    "record_audit",
    "revocation_version",
    "revoke_key",
]

log = logging.getLogger("omtl.audit")

#: Approximate length the audit stream is trimmed to.
AUDIT_MAXLEN = 100_000
#: Name of the key registered from ``OMTL_BOOTSTRAP_ADMIN_KEY_FILE``.
BOOTSTRAP_NAME = "bootstrap-admin"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}$")
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


@dataclass(frozen=True)
class KeyRecord:
    """What Redis holds about a key (never the key itself)."""

    key_id: str
    name: str
    role: Role
    models: tuple[str, ...] | None
    hash: str
    created: float

    def principal(self) -> Principal:
        """The principal requests with this key act as."""
        models = None if self.models is None else frozenset(self.models)
        return Principal(self.key_id, self.name, self.role, models)

    def public(self) -> dict[str, Any]:
        """The record without its hash (for listings)."""
        return {
            "id": self.key_id,
            "name": self.name,
            "role": self.role.value,
            "models": None if self.models is None else list(self.models),
            "created": self.created,
        }

    def encode(self) -> bytes:
        """The JSON stored in the keys hash."""
        return orjson.dumps({**self.public(), "hash": self.hash})

    @classmethod
    def decode(cls, raw: bytes | str) -> KeyRecord:
        """Parse a stored record."""
        data = orjson.loads(raw)
        models = data.get("models")
        return cls(
            key_id=str(data["id"]),
            name=str(data["name"]),
            role=Role(data["role"]),
            models=None if models is None else tuple(str(m) for m in models),
            hash=str(data["hash"]),
            created=float(data["created"]),
        )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _check(role: str, name: str | None, models: list[str] | None) -> Role:
    """Validate the fields of a new key; ValueError with a message otherwise."""
    try:
        checked = Role(role)
    except ValueError:
        raise ValueError(
            f"unknown role {role!r}; one of {', '.join(r.value for r in Role)}"
        ) from None
    if name is not None and not _NAME.match(name):
        raise ValueError(f"invalid key name {name!r}: 1-64 of letters, digits, '_.@-'")
    for model in models or []:
        if not _MODEL.match(model):
            raise ValueError(f"invalid model name {model!r}")
    return checked


async def create_key(
    r: AsyncStore,
    role: str,
    name: str | None = None,
    models: list[str] | None = None,
    token: str | None = None,
) -> tuple[str, KeyRecord]:
    """Create a key; returns ``(token, record)``. The token is shown once and never stored.

    ``models`` limits the key to those models (None or empty: all). Raises
    ``ValueError`` for an invalid role, name or model, or a name already taken.
    """
    checked = _check(role, name, models)
    token = token or new_token()
    key_id = token_id(token)
    if key_id is None:
        raise ValueError("not an omtl key (expected omtl_<12 hex digits>_<secret>)")
    name = name or f"key-{key_id}"
    if not await r.hsetnx(keys.auth_names_key(), name, key_id):
        raise ValueError(f"a key named {name!r} exists; revoke it or choose another name")
    record = KeyRecord(
        key_id=key_id,
        name=name,
        role=checked,
        models=tuple(sorted(set(models))) if models else None,
        hash=hash_token(token),
        created=time.time(),
    )
    await r.hset(keys.auth_keys_key(), key_id, record.encode())
    return token, record


async def get_key(r: AsyncStore, key_id: str) -> KeyRecord | None:
    """The record of a live key, or None (unknown or revoked)."""
    raw = await r.hget(keys.auth_keys_key(), key_id)
    return None if raw is None else KeyRecord.decode(raw)


async def list_keys(r: AsyncStore) -> list[KeyRecord]:
    """Every live key, by name."""
    raw = await r.hvals(keys.auth_keys_key())
    return sorted((KeyRecord.decode(v) for v in raw), key=lambda k: k.name)


async def revoke_key(r: AsyncStore, id_or_name: str) -> KeyRecord | None:
    """Revoke the key with this id or name; returns its record, None when there is none.

    Every API process drops its cached keys within ``OMTL_AUTH_REVOCATION_CHECK_S``.
    """
    record = await get_key(r, id_or_name)
    if record is None:
        key_id = await r.hget(keys.auth_names_key(), id_or_name)
        if key_id is None:
            return None
        record = await get_key(r, key_id.decode() if isinstance(key_id, bytes) else key_id)
        if record is None:
            return None
    async with r.pipeline(transaction=True) as p:
        p.hdel(keys.auth_keys_key(), record.key_id)
        p.hdel(keys.auth_names_key(), record.name)
        p.sadd(keys.auth_revoked_key(), record.key_id)
        p.incr(keys.auth_version_key())
        await p.execute()
    return record


async def revocation_version(r: AsyncStore) -> bytes | None:
    """The revocation counter (None before the first revocation)."""
    value: Any = await r.get(keys.auth_version_key())
    return None if value is None else bytes(value)


async def ensure_bootstrap_key(r: AsyncStore, token: str) -> str:
    """Register ``token`` as the unrestricted admin key ``bootstrap-admin`` unless it is
    registered already or was revoked; returns what happened (for the log)."""
    key_id = token_id(token)
    if key_id is None:
        raise ValueError(
            "the bootstrap admin key is not an omtl key (make one with `omtl keys token`)"
        )
    if await r.sismember(keys.auth_revoked_key(), key_id):
        return f"bootstrap admin key {key_id} was revoked; not registered again"
    existing = await get_key(r, key_id)
    if existing is not None:
        return f"bootstrap admin key {key_id} is registered as {existing.name!r}"
    await create_key(r, Role.ADMIN.value, BOOTSTRAP_NAME, None, token=token)
    return f"bootstrap admin key {key_id} registered as {BOOTSTRAP_NAME!r}"


async def record_audit(r: AsyncStore, actor: str, action: str, target: str, **details: Any) -> None:
    """Log ``actor`` (a key name) doing ``action`` on ``target`` and append it to the audit stream."""
    log.info("audit: %s %s %s %s", actor, action, target, details or "")
    fields: dict[Any, Any] = {"ts": f"{time.time():.3f}", "actor": actor, "action": action}
    fields["target"] = target
    if details:
        fields["details"] = orjson.dumps(details)
    await r.xadd(keys.audit_key(), fields, maxlen=AUDIT_MAXLEN, approximate=True)


async def read_audit(r: AsyncStore, count: int = 100) -> list[dict[str, Any]]:
    """The newest ``count`` audit entries, oldest first."""
    entries: Any = await r.xrevrange(keys.audit_key(), count=count)
    out = []
    for entry_id, fields in reversed(entries or []):
        item: dict[str, Any] = {"id": _text(entry_id)}
        for k, v in fields.items():
            item[_text(k)] = orjson.loads(v) if _text(k) == "details" else _text(v)
        out.append(item)
    return out
