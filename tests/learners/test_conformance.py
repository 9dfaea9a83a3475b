"""Every registered learner passes every conformance check (learners.checks)."""

from __future__ import annotations

import pytest

import learners
from learners.checks import yield_checks
from learners.checks.common import default_factory


def _cases() -> list[object]:
    cases = []
    for info in learners.available():
        cls = learners.get(info.name)
        for i, params in enumerate(cls.conformance_params):
            for check in yield_checks(cls):
                case_id = f"{info.name}[{i}]:{check.__name__}"
                cases.append(pytest.param(cls, params, check, id=case_id))
    return cases


@pytest.mark.parametrize(("cls", "params", "check"), _cases())
def test_conformance(cls, params, check):
    reason = cls.check_exemptions.get(check.__name__)
    if reason:
        pytest.skip(f"{cls.name} opts out: {reason}")
    check(default_factory(cls, params))


def test_every_learner_is_registered_under_its_own_name():
    names = [info.name for info in learners.available()]
    assert len(names) == len(set(names))
    for name in names:
        assert learners.get(name).name == name


def test_exemptions_name_real_checks_and_give_reasons():
    check_names = {c.__name__ for c in learners.checks.ALL_CHECKS}
    for info in learners.available():
        for check, reason in learners.get(info.name).check_exemptions.items():
            assert check in check_names, f"{info.name} exempts unknown check {check}"
            assert len(reason.strip()) > 10, f"{info.name} gives no real reason for {check}"
