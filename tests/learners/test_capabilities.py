"""The declared capability flags of the learner contract, and their conformance check."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import learners
from learners.checks.common import check_declared_capabilities, default_factory
from learners.perceptron.linear import IndependentPerceptrons


class _UndeclaredOutliers(IndependentPerceptrons):
    """Implements the outlier report without declaring it."""

    def outlier_scores(self) -> np.ndarray:
        return np.zeros(self.n_tasks)

    def outlier_tasks(self) -> list[int]:
        return []


class _DeclaredWithoutMethods(IndependentPerceptrons):
    """Declares a query probability it does not have."""

    reports_query_probability = True


class _PassiveThatRefuses(IndependentPerceptrons):
    """Not active, yet its query_one can answer False."""

    def query_one(self, x: Any, task: int) -> bool:
        return task != 0


@pytest.mark.parametrize("cls", [_UndeclaredOutliers, _DeclaredWithoutMethods, _PassiveThatRefuses])
def test_the_capability_check_rejects_a_mismatch(cls):
    with pytest.raises(AssertionError):
        check_declared_capabilities(default_factory(cls, {}))


def test_declared_capabilities_of_the_registered_learners():
    probability = {
        i.name for i in learners.available() if learners.get(i.name).reports_query_probability
    }
    outliers = {i.name for i in learners.available() if learners.get(i.name).reports_outliers}
    assert probability == {
        "selective-sampling",
        "independent",
        "amlc-adaptive",
        "peer-adaptive",
        "peer-share-adaptive",
    }
    assert outliers == {"rom-pgd", "rom-rda", "adaptive-logistic", "adaptive-hinge"}


def test_reporter_accessors_follow_the_flags():
    rom = learners.make("rom-pgd", n_features=3, n_tasks=2)
    ipl = learners.make("ipl", n_features=3, n_tasks=2)
    assert learners.outlier_reporter(rom) is rom
    assert learners.outlier_reporter(ipl) is None
    assert learners.query_probability_reporter(ipl) is None
    sampler = learners.make("selective-sampling", n_features=3, n_tasks=2)
    reporter = learners.query_probability_reporter(sampler)
    assert reporter is not None
    assert reporter.query_probability(np.ones(3), 1) == 1.0
