"""``/keys`` and ``/audit``: API key management and the audit trail (admin keys for every model).

See docs/architecture.md, "Authentication and roles". A new key is shown once,
in the answer of ``POST /keys``; Redis keeps only its hash.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from service.api.access import require_key_admin
from service.api.deps import ContextDep
from service.api.errors import BadInput, NotFound
from service.api.jsonio import parse_body, read_json
from service.api.openapi import ERRORS, ErrorBody, needs, raw_body
from service.api.schemas import MODEL_NAME_PATTERN
from service.auth import Role
from service.auth.store import create_key, list_keys, read_audit, revoke_key

router = APIRouter(tags=["keys"])

_KEY_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}$"


class KeyCreate(BaseModel):
    """A new API key."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["admin", "producer", "annotator", "viewer"]
    name: str | None = Field(
        default=None,
        pattern=_KEY_NAME,
        description="Unique name, recorded in the audit trail and as the annotator of labels "
        "(default key-<id>).",
    )
    models: list[Annotated[str, Field(pattern=MODEL_NAME_PATTERN)]] | None = Field(
        default=None,
        min_length=1,
        description="Limit the key to these models (default: every model).",
    )


class KeyInfo(BaseModel):
    """A key as listed (never the key itself)."""

    id: str = Field(description="Public id: the 12 hex digits after omtl_ in the key.")
    name: str
    role: str
    models: list[str] | None
    created: float


class KeyCreated(KeyInfo):
    """A created key: ``key`` is shown this once."""

    key: str = Field(description="Send as Authorization: Bearer <key>. Not shown again.")


class AuditEntry(BaseModel):
    """One audit record."""

    id: str
    ts: str
    actor: str = Field(description="Name of the key (anonymous while OMTL_AUTH is off).")
    action: str = Field(
        description="model.create, model.reconfigure, model.delete, key.create, key.revoke"
    )
    target: str
    details: dict[str, Any] | None = None


_ADMIN = needs(Role.ADMIN, keys_admin=True)


@router.post(
    "/keys",
    status_code=201,
    response_model=KeyCreated,
    responses={422: ERRORS[422]},
    openapi_extra=raw_body(KeyCreate) | _ADMIN,
)
async def create(ctx: ContextDep, request: Request) -> dict[str, Any]:
    """Create an API key; the answer holds the key, shown this once."""
    principal = require_key_admin(request)
    body = parse_body(KeyCreate, await read_json(request))
    try:
        token, record = await create_key(ctx.redis, body.role, body.name, body.models)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    await request.app.state.access.audit(
        principal, "key.create", record.name, id=record.key_id, role=record.role.value
    )
    return {**record.public(), "key": token}


@router.get("/keys", response_model=list[KeyInfo], openapi_extra=_ADMIN)
async def list_all(ctx: ContextDep, request: Request) -> list[dict[str, Any]]:
    """Every live key (id, name, role, models, created), never the keys themselves."""
    require_key_admin(request)
    return [record.public() for record in await list_keys(ctx.redis)]


@router.delete(
    "/keys/{key}",
    status_code=204,
    responses={404: {"model": ErrorBody, "description": "No live key of that id or name."}},
    openapi_extra=_ADMIN,
)
async def revoke(
    ctx: ContextDep,
    request: Request,
    key: Annotated[str, Path(pattern=_KEY_NAME, description="Key id or name.")],
) -> Response:
    """Revoke a key: every API process refuses it within a second or two."""
    principal = require_key_admin(request)
    record = await revoke_key(ctx.redis, key)
    if record is None:
        raise NotFound(f"no live key with the id or name {key!r}")
    await request.app.state.access.audit(principal, "key.revoke", record.name, id=record.key_id)
    return Response(status_code=204)


@router.get("/audit", response_model=list[AuditEntry], openapi_extra=_ADMIN)
async def audit(
    ctx: ContextDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Newest entries.")] = 100,
) -> list[dict[str, Any]]:
    """The newest audit entries, oldest first: who created, reconfigured or deleted which
    model, who created or revoked which key."""
    require_key_admin(request)
    return await read_audit(ctx.redis, limit)
