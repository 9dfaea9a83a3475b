"""Which live worker serves which model: rendezvous hashing with bounded loads.

Every worker computes the same assignment from the same two lists (the model
names in the registry and the live members of :mod:`service.worker.membership`),
without talking to the others. Each model ranks the members by a
highest-random-weight score (a hash of member and model); models are placed in
name order on the best-ranked member that still has room. The room is
``floor(n / w)`` models per member, plus one for the first ``n mod w`` members
that reach it, so the counts differ by at most one, and a member joining or
leaving moves few models (most keep their first choice).

See ``docs/scaling.md``, "Assigning models to workers".
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

__all__ = ["assign", "score", "share"]


def score(member: str, model: str) -> int:
    """The rendezvous weight of ``member`` for ``model`` (64 bits of BLAKE2b)."""
    digest = hashlib.blake2b(f"{member}\x00{model}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def assign(models: Iterable[str], members: Sequence[str]) -> dict[str, str]:
    """The member serving each model (every member computes the same answer)."""
    names = sorted(set(models))
    crew = sorted(set(members))
    if not crew:
        return {}
    base, extra = divmod(len(names), len(crew))
    load = dict.fromkeys(crew, 0)
    full_plus_one = 0
    out: dict[str, str] = {}
    for model in names:
        ranked = sorted(crew, key=lambda member: (score(member, model), member), reverse=True)
        for member in ranked:
            room = base + 1 if full_plus_one < extra or load[member] > base else base
            if load[member] < room:
                load[member] += 1
                if load[member] == base + 1:
                    full_plus_one += 1
                out[model] = member
                break
    return out


def share(models: Iterable[str], members: Sequence[str], me: str) -> list[str]:
    """The models ``me`` serves among ``models`` (``me`` counts as live)."""
    crew = list(members) if me in members else [*members, me]
    return sorted(model for model, member in assign(models, crew).items() if member == me)
