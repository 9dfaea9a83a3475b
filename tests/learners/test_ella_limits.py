"""The ELLA family refuses, at creation and at add_task, a state it cannot hold."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.ella import limits
from learners.ella.limits import STATE_LIMIT_BYTES, check_state_size, state_bytes

ELLA = ("ella", "ella-svd", "ella-incremental", "ella-dual", "mtl-svd")


@pytest.mark.parametrize("base_learner", ["linear", "logistic"])
@pytest.mark.parametrize("name", ELLA)
def test_sparse_high_dimensional_input_is_refused_at_creation(name: str, base_learner: str) -> None:
    """d = 100,000 (the sparse stream of the throughput benchmark): a ValueError naming the
    per-task d x d matrix, the bytes needed and the limit; nothing is allocated."""
    with pytest.raises(ValueError) as info:
        learners.make(name, n_features=100_000, n_tasks=10, base_learner=base_learner)
    message = str(info.value)
    assert message.startswith(f"{name} keeps a d x d matrix per task")
    assert "d=100001" in message and "n_tasks=10" in message
    assert f"the limit is {STATE_LIMIT_BYTES / 2**30:.3g} GiB" in message
    needed = sum(
        state_bytes(
            dim=100_001,
            k=5,
            n_tasks=10,
            buffer_rows=500,
            linear=base_learner == "linear",
            accumulators=name in ("ella", "ella-incremental", "ella-dual"),
        ).values()
    )
    assert f"needs {needed / 2**30:.3g} GiB" in message


@pytest.mark.parametrize("name", ELLA)
def test_add_task_beyond_the_limit_is_refused_and_changes_nothing(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the limit set to the state of exactly three tasks, the fourth is refused."""
    model = learners.make(name, n_features=6, n_tasks=1, k=2)
    sizes = state_bytes(
        dim=7, k=2, n_tasks=3, buffer_rows=0, linear=True, accumulators=model.uses_accumulators
    )
    monkeypatch.setattr(limits, "STATE_LIMIT_BYTES", sum(sizes.values()))
    model.add_task()
    model.add_task()
    with pytest.raises(ValueError, match="d x d matrix per task"):
        model.add_task()
    assert model.n_tasks == 3 == model.S_.shape[0] == model.D_.shape[0] == model.xtx_.shape[0]
    with pytest.raises(ValueError, match="n_tasks=4 needs"):
        learners.make(name, n_features=6, n_tasks=4, k=2)


def test_arrays_a_variant_never_reads_are_empty() -> None:
    """ELLA-SVD and MTL-SVD keep no dk x dk system; the logistic base learner no X^T X."""
    svd = learners.make("ella-svd", n_features=6, n_tasks=3, k=2)
    assert svd.A_.shape == (0, 0) and svd.b_.shape == (0,) and svd.xtx_.shape == (3, 7, 7)
    ella = learners.make("ella", n_features=6, n_tasks=3, k=2, base_learner="logistic")
    assert ella.A_.shape == (14, 14) and ella.xtx_.shape == (3, 0, 0)
    ella.add_task()
    assert ella.xtx_.shape == (4, 0, 0)


def test_limit_is_a_parameter_of_the_check() -> None:
    sizes = state_bytes(dim=10, k=2, n_tasks=3, buffer_rows=0, linear=True, accumulators=True)
    total = sum(sizes.values())
    assert total == 8 * (3 * 100 + 20 + 3 * 12 + 3 * 100 + 400 + 20)
    check_state_size(
        "ella", dim=10, k=2, n_tasks=3, buffer_rows=0, linear=True, accumulators=True, limit=total
    )
    with pytest.raises(ValueError, match="the limit is"):
        check_state_size(
            "ella",
            dim=10,
            k=2,
            n_tasks=3,
            buffer_rows=0,
            linear=True,
            accumulators=True,
            limit=total - 1,
        )


def test_a_learner_within_the_limit_still_learns() -> None:
    model = learners.make("ella", n_features=20, n_tasks=2, k=2, refresh_every=5)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 20))
    model.learn_many(X, X @ rng.standard_normal(20), 0)
    assert np.abs(model.codes()[0]).sum() > 0
