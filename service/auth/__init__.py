"""API keys, roles, rate limits and the audit trail (docs/architecture.md, "Authentication and roles").

* :mod:`~service.auth.roles`: roles and the principal a request acts as;
* :mod:`~service.auth.tokens`: generating, parsing and hashing keys;
* :mod:`~service.auth.store`: key records and the audit stream in Redis;
* :mod:`~service.auth.verifier`: the API's cached, revocation-aware key check;
* :mod:`~service.auth.limiter`: per-key token buckets;
* :mod:`~service.auth.mode`: ``OMTL_AUTH`` and the bind-address rule.
"""

from __future__ import annotations

from service.auth.roles import ANONYMOUS, Principal, Role

__all__ = ["ANONYMOUS", "Principal", "Role"]
