"""The compiled ROM-family passes against their numpy rounds, over seeded random streams.

``rom-pgd``, ``rom-rda`` and ``coml`` with every conformance parameter set plus
sets that reach the rare branches (a scale folded into its vector below 1e-100,
an outlier part set back to zero), dense and CSR rows: the kernel path
(``score_and_learn_many`` in random blocks, ``score_and_learn_one``) and the
reference (``_decision`` + ``_learn_reference`` row by row) give the same
predictions and hinge updates and states equal to 1e-12 relative (the harness
and its tolerance rule are those of ``test_omtl_kernels``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import learners
from learners.rom import kernels as rom_kernels
from learners.rom.pgd import RobustPGD
from tests.learners.test_omtl_kernels import cases, compare, random_stream

ROM = ("rom-pgd", "rom-rda", "coml")

#: Parameter sets for the rare branches: alpha/beta/nu large enough that the lazy scales
#: fall below 1e-100 within a few dozen events; gamma near the step norms, so q_i leaves
#: zero and is set back to zero again and again.
RARE = (
    pytest.param("rom-pgd", {"alpha": 1000.0, "beta": 1000.0, "eta": 0.5}, id="pgd-fold"),
    pytest.param("rom-pgd", {"gamma": 1.5, "eta": 0.5}, id="pgd-clear"),
    pytest.param("rom-pgd", {"gamma": 0.3, "eta": 0.2, "beta": 0.5}, id="pgd-churn"),
    pytest.param("coml", {"nu": 1000.0}, id="coml-fold"),
    pytest.param("rom-rda", {"gamma": 0.05, "kappa": 0.3}, id="rda-outliers"),
)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize(("name", "params"), [*cases(ROM), *RARE])
def test_kernel_equals_the_numpy_rounds(name: str, params: dict[str, Any], sparse: bool) -> None:
    for seed in (1, 2):
        fast, _ = compare(name, params, sparse, seed, batch=False)
    if name != "coml":
        assert fast.n_updates_ > 100


def test_outlier_part_is_cleared_from_its_remembered_support() -> None:
    """Sparse rows: Q_[k] is zeroed at the entries written since it was last zero; after a
    state restore (support unknown) the whole row is cleared, with the same result."""
    K, d = 3, 40
    X, y, tasks = random_stream(True, 600, K, d, seed=7)
    params = {"gamma": 1.5, "eta": 0.5}
    a = learners.make("rom-pgd", n_features=d, n_tasks=K, **params)
    a.score_and_learn_many(X[:300], y[:300], tasks[:300])
    assert isinstance(a, RobustPGD)
    b = learners.get("rom-pgd").from_state_dict(a.state_dict())
    assert isinstance(b, RobustPGD)
    assert (b._q_support_n == -1).all()
    cleared = 0
    for i in range(300, 600, 5):
        before = a.q_sqnorm_.copy()
        np.testing.assert_array_equal(
            a.score_and_learn_many(X[i : i + 5], y[i : i + 5], tasks[i : i + 5]),
            b.score_and_learn_many(X[i : i + 5], y[i : i + 5], tasks[i : i + 5]),
        )
        cleared += int(((before > 0.0) & (a.q_sqnorm_ == 0.0)).sum())
        np.testing.assert_array_equal(a.Q_, b.Q_)
    assert cleared > 5


def test_warm_compiles_and_reports_seconds() -> None:
    seconds = rom_kernels.warm()
    assert 0.0 <= seconds < 300.0
    assert rom_kernels.warm() < 0.05
