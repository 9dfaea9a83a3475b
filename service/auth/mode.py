"""``OMTL_AUTH`` and the bind-address rule (docs/architecture.md, "Authentication and roles").

Secure by default: with ``OMTL_AUTH`` unset, authentication is off only while
the API binds to a loopback address (``make run``); on any other address the
API refuses to start until ``OMTL_AUTH=required`` or an explicit
``OMTL_AUTH=off`` says which is meant.

>>> from service.settings import Settings
>>> auth_required(Settings(api_host="127.0.0.1"))
False
>>> auth_required(Settings(api_host="0.0.0.0", auth="required"))
True
>>> auth_required(Settings(api_host="0.0.0.0"))
Traceback (most recent call last):
...
service.auth.mode.AuthNotConfigured: the API would listen on 0.0.0.0 ...
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from service.auth.tokens import token_id
from service.settings import Settings

__all__ = ["AuthNotConfigured", "auth_required", "is_loopback", "read_bootstrap_key"]


class AuthNotConfigured(RuntimeError):
    """The API may not start with these settings (message says what to set)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def auth_required(settings: Settings) -> bool:
    """Whether requests need a key; raises :class:`AuthNotConfigured` for an unset
    ``OMTL_AUTH`` on a non-loopback bind address."""
    if settings.auth is not None:
        return settings.auth == "required"
    if is_loopback(settings.api_host):
        return False
    raise AuthNotConfigured(
        f"the API would listen on {settings.api_host} without API keys. Set OMTL_AUTH=required "
        "(and create an admin key: `omtl keys create --role admin`, or "
        "OMTL_BOOTSTRAP_ADMIN_KEY_FILE), or OMTL_AUTH=off to serve without keys on purpose"
    )


def read_bootstrap_key(path: Path) -> str:
    """The key in ``path`` (surrounding whitespace ignored); raises AuthNotConfigured."""
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise AuthNotConfigured(
            f"cannot read OMTL_BOOTSTRAP_ADMIN_KEY_FILE {path}: {exc}"
        ) from None
    if token_id(token) is None:
        raise AuthNotConfigured(
            f"OMTL_BOOTSTRAP_ADMIN_KEY_FILE {path} does not hold an omtl key "
            "(write one with `omtl keys token > FILE`)"
        )
    return token
