"""Who may do what: the API side of authentication (docs/architecture.md, "Authentication and roles").

:class:`AccessControl` is built by the app's lifespan and kept in
``app.state.access``. :class:`service.api.middleware.AuthMiddleware` verifies
the ``Authorization: Bearer`` key of every request except the public paths
(before the ``/predict`` fast path and before routing) and puts the key's
:class:`~service.auth.Principal` in the request scope; each endpoint then
calls :func:`authorize` with the role it needs and, once it knows the model
addressed, :func:`check_model`. While ``OMTL_AUTH`` is off every request acts
as :data:`~service.auth.ANONYMOUS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from service.api.errors import ApiError, TooBusy
from service.auth import Principal, Role
from service.auth.limiter import RateLimiter, ScriptRunner, SharedRateLimiter
from service.auth.store import record_audit
from service.auth.verifier import KeyVerifier
from service.settings import Settings
from service.store import AsyncStore

__all__ = [
    "AccessControl",
    "Forbidden",
    "Unauthorized",
    "annotator_of",
    "authorize",
    "check_model",
    "rate_limit",
    "visible_models",
]


class Forbidden(ApiError):
    """The key is valid but its role or models do not allow this (403)."""

    status_code = 403


class Unauthorized(ApiError):
    """No key, or not a live one (401)."""

    status_code = 401

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.headers = {"WWW-Authenticate": "Bearer"}


@dataclass
class AccessControl:
    """The key check, the rate limiters and the audit trail of one API process."""

    required: bool
    redis: AsyncStore
    verifier: KeyVerifier
    limiters: dict[str, RateLimiter | SharedRateLimiter] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        settings: Settings,
        redis: AsyncStore,
        required: bool,
        run_script: ScriptRunner | None = None,
    ) -> AccessControl:
        """From the settings (no I/O); ``run_script`` runs the shared limiter's script
        (``OMTL_RATE_LIMIT_SCOPE=redis``)."""
        burst = settings.rate_burst
        rates = {"label": settings.label_rate_per_key, "events": settings.events_rate_per_key}
        limiters: dict[str, RateLimiter | SharedRateLimiter] = {
            route: RateLimiter(rate, burst) for route, rate in rates.items()
        }
        if settings.rate_limit_scope == "redis":
            if run_script is None:
                raise ValueError("OMTL_RATE_LIMIT_SCOPE=redis needs a script runner")
            limiters = {
                route: SharedRateLimiter(route, rate, burst, run_script)
                for route, rate in rates.items()
            }
        return cls(
            required=required,
            redis=redis,
            verifier=KeyVerifier(
                redis,
                cache_s=settings.auth_cache_s,
                check_every_s=settings.auth_revocation_check_s,
            ),
            limiters=limiters,
        )

    async def audit(self, principal: Principal, action: str, target: str, **details: Any) -> None:
        """Record ``principal`` doing ``action`` on ``target`` (log and audit stream)."""
        await record_audit(self.redis, principal.name, action, target, **details)


def principal_of(request: Request) -> Principal:
    """The principal the middleware put in the request scope."""
    principal = request.scope.get("state", {}).get("principal")
    if principal is None:  # a public path, or an app built without the middleware
        raise Unauthorized("missing API key: send Authorization: Bearer <key>")
    assert isinstance(principal, Principal)
    return principal


def authorize(request: Request, role: Role) -> Principal:
    """The request's principal if its role allows ``role``; 403 otherwise."""
    principal = principal_of(request)
    if not principal.may(role):
        raise Forbidden(
            f"the key {principal.name!r} has the role {principal.role.value}; "
            f"this needs {role.value} (or admin)"
        )
    return principal


def check_model(principal: Principal, model: str) -> None:
    """403 unless the key may address ``model``."""
    if not principal.may_use(model):
        raise Forbidden(f"the key {principal.name!r} is not allowed to use the model {model!r}")


def require_key_admin(request: Request) -> Principal:
    """The principal of an admin key for every model (key management); 403 otherwise."""
    principal = authorize(request, Role.ADMIN)
    if not principal.unrestricted_admin:
        raise Forbidden(
            f"the key {principal.name!r} is limited to some models: it cannot manage keys"
        )
    return principal


def visible_models(principal: Principal, names: list[str]) -> list[str]:
    """The models of ``names`` the key may see."""
    return names if principal.models is None else [n for n in names if principal.may_use(n)]


async def rate_limit(request: Request, principal: Principal, route: str) -> None:
    """429 with ``Retry-After`` when the key's bucket for ``route`` is empty."""
    if principal.anonymous:
        return
    access: AccessControl = request.app.state.access
    wait = await access.limiters[route].wait(principal.key_id)
    if wait > 0:
        raise TooBusy(
            f"the key {principal.name!r} is over its rate limit for /{route}; retry later",
            max(1, math.ceil(wait)),
        )


def annotator_of(principal: Principal, sent: str | None) -> str | None:
    """Who a label is recorded as: the key's name (a client-sent name is ignored);
    without authentication, whatever the client sent."""
    return sent if principal.anonymous else principal.name
