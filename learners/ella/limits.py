"""How large an ELLA-family learner may grow, checked before anything is allocated.

The ELLA family is dense in the feature dimension by construction
(ruvolo2014 Eq. 7; docs/algorithms.md Sec. 4): every task keeps ``D_t``, a
``d x d`` matrix, and the linear base learner its ``X^T X`` (another ``d x d``
per task); ``ella``, ``ella-incremental`` and ``ella-dual`` also keep the
``dk x dk`` system ``A`` of their basis step. On sparse high-dimensional data
(d = 100,000) that is terabytes, so such a learner is refused at creation (and
at ``add_task``) with a ``ValueError`` that names the arrays, the bytes they need
and the limit, instead of failing inside numpy.
"""

from __future__ import annotations

__all__ = ["STATE_LIMIT_BYTES", "check_state_size", "state_bytes"]

#: Largest learned state (bytes) an ELLA-family learner may allocate: 4 GiB.
STATE_LIMIT_BYTES = 4 * 1024**3

_FLOAT = 8


def state_bytes(
    *, dim: int, k: int, n_tasks: int, buffer_rows: int, linear: bool, accumulators: bool
) -> dict[str, int]:
    """Bytes of each large array of the learned state (see :class:`~learners.ella.model.BasisLearner`)."""
    sizes = {
        "D (n_tasks x d x d)": n_tasks * dim * dim,
        "L, theta and codes": dim * k + n_tasks * (dim + k),
    }
    if linear:
        sizes["X^T X (n_tasks x d x d)"] = n_tasks * dim * dim
    else:
        sizes["example buffer (n_tasks x buffer_size x d)"] = n_tasks * buffer_rows * (dim + 1)
    if accumulators:
        sizes["A (dk x dk)"] = (dim * k) ** 2 + dim * k
    return {name: count * _FLOAT for name, count in sizes.items()}


def check_state_size(
    name: str,
    *,
    dim: int,
    k: int,
    n_tasks: int,
    buffer_rows: int,
    linear: bool,
    accumulators: bool,
    limit: int | None = None,
) -> None:
    """Raise ``ValueError`` when the state of learner ``name`` would exceed ``limit`` bytes.

    ``limit`` None reads :data:`STATE_LIMIT_BYTES` at the time of the call.
    """
    limit = STATE_LIMIT_BYTES if limit is None else limit
    sizes = state_bytes(
        dim=dim,
        k=k,
        n_tasks=n_tasks,
        buffer_rows=buffer_rows,
        linear=linear,
        accumulators=accumulators,
    )
    total = sum(sizes.values())
    if total <= limit:
        return
    parts = ", ".join(f"{part} {size / 2**30:.3g} GiB" for part, size in sizes.items())
    raise ValueError(
        f"{name} keeps a d x d matrix per task"
        + (" and a dk x dk system" if accumulators else "")
        + f"; d={dim} (input dimension after the bias), k={k}, n_tasks={n_tasks} needs "
        f"{total / 2**30:.3g} GiB ({parts}); the limit is {limit / 2**30:.3g} GiB "
        "(learners.ella.limits.STATE_LIMIT_BYTES). The ELLA family is dense in d: reduce the "
        "input to a few hundred features (e.g. hash or project sparse inputs) or use a learner "
        "whose state is linear in d (omtl-*, rom-*, coml)"
    )
