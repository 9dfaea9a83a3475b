"""Roles and the principal a request acts as (docs/architecture.md, "Authentication and roles").

``admin`` may do everything (manage models and keys); ``producer`` sends
events (``/predict``, ``/events``); ``annotator`` reads label requests and
answers them (``/queries``, ``/label``); every role may read (``viewer``:
the read-only GETs). A key may be limited to some models.

>>> alice = Principal("a1b2c3d4e5f6", "alice", Role.PRODUCER, frozenset({"spam"}))
>>> alice.may(Role.PRODUCER), alice.may(Role.VIEWER), alice.may(Role.ADMIN)
(True, True, False)
>>> alice.may_use("spam"), alice.may_use("ham")
(True, False)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["ANONYMOUS", "Principal", "Role"]


class Role(enum.StrEnum):
    """What a key may do."""

    ADMIN = "admin"
    PRODUCER = "producer"
    ANNOTATOR = "annotator"
    VIEWER = "viewer"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: the key's id and name, its role and its models (None: all)."""

    key_id: str
    name: str
    role: Role
    models: frozenset[str] | None = None

    def may(self, needed: Role) -> bool:
        """Whether the role allows an operation that needs ``needed``."""
        return self.role is Role.ADMIN or needed is Role.VIEWER or self.role is needed

    def may_use(self, model: str) -> bool:
        """Whether the key may address ``model``."""
        return self.models is None or model in self.models

    @property
    def unrestricted_admin(self) -> bool:
        """An admin key for every model (only these manage keys)."""
        return self.role is Role.ADMIN and self.models is None

    @property
    def anonymous(self) -> bool:
        """The principal of every request while authentication is off."""
        return not self.key_id


#: Every request's principal while ``OMTL_AUTH=off``: may do everything, recorded as nobody.
ANONYMOUS = Principal("", "anonymous", Role.ADMIN, None)
