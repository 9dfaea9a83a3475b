"""``cmtl`` runs as two classes behind one registry name, chosen from its parameters."""

from __future__ import annotations

import json

import numpy as np
import pytest

import learners
from learners.perceptron.linear import BFamilyMultitaskPerceptron, MatrixMultitaskPerceptron
from learners.perceptron.multitask import MultitaskPerceptron

GRAPH = np.array([[0.0, 1.0], [1.0, 0.0]])


@pytest.mark.parametrize(
    ("params", "layout", "fields"),
    [
        ({}, BFamilyMultitaskPerceptron, ("V_", "s_", "n_mistakes_")),
        ({"b": 0.5}, BFamilyMultitaskPerceptron, ("V_", "s_", "n_mistakes_")),
        ({"graph": GRAPH}, MatrixMultitaskPerceptron, ("W_", "Ainv_", "n_mistakes_")),
        ({"A": 2.0 * np.eye(2)}, MatrixMultitaskPerceptron, ("W_", "Ainv_", "n_mistakes_")),
    ],
)
def test_the_parameters_pick_the_layout_and_its_state_fields(params, layout, fields):
    model = learners.make("cmtl", n_features=3, n_tasks=2, **params)
    assert type(model) is layout
    assert isinstance(model, MultitaskPerceptron)
    assert learners.get("cmtl") is MultitaskPerceptron
    assert model.state_fields == fields
    assert sorted(k for k in model.state_dict() if k.startswith("state.")) == sorted(
        f"state.{f}" for f in fields
    )
    assert type(learners.from_state_dict(model.state_dict())) is layout
    assert type(model.clone()) is layout


def test_a_layout_class_refuses_the_other_layouts_parameters():
    with pytest.raises(ValueError, match="MatrixMultitaskPerceptron"):
        BFamilyMultitaskPerceptron(n_features=3, n_tasks=2, graph=GRAPH)
    with pytest.raises(ValueError, match="BFamilyMultitaskPerceptron"):
        MatrixMultitaskPerceptron(n_features=3, n_tasks=2)
    with pytest.raises(ValueError, match="at most one"):
        learners.make("cmtl", n_features=3, n_tasks=2, b=1.0, graph=GRAPH)


def _rng_state() -> str:
    return json.dumps(np.random.Generator(np.random.PCG64(0)).bit_generator.state)


def _snapshot(state: dict[str, object], **params: object) -> dict[str, object]:
    """A state dict laid out as the single-class cmtl wrote it (format 1)."""
    header: dict[str, object] = {
        "learner": "cmtl",
        "format": 1,
        "n_features": 2,
        "n_tasks": 2,
        "seed": 0,
        "rng": _rng_state(),
        "n_queries": 0,
        "param.b": None,
        "param.graph": None,
        "param.graph_scale": 1.0,
        "param.A": None,
        "param.append_bias": False,
        "param.l2_normalize": False,
    }
    header.update({f"param.{k}": v for k, v in params.items()})
    header.update({f"state.{k}": v for k, v in state.items()})
    return header


def test_old_b_family_snapshot_loads_and_predicts():
    V = np.array([[1.0, -2.0], [0.5, 0.0]])
    s = V.sum(axis=0)
    model = learners.from_state_dict(
        _snapshot({"V_": V, "s_": s, "n_mistakes_": np.array(3)}, b=1.0)
    )
    assert type(model) is BFamilyMultitaskPerceptron
    # w_0 = (v_0 + (b/K) s) / (1 + b) = ([1, -2] + 0.5 [1.5, -2]) / 2
    np.testing.assert_allclose(model.task_weights()[0], [0.875, -1.5], rtol=1e-15)
    assert model.decision_one(np.array([1.0, 1.0]), 0) == pytest.approx(-0.625, rel=1e-15)
    assert model.n_mistakes_ == 3


def test_old_matrix_snapshot_loads_and_predicts():
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    Ainv = np.array([[0.6, 0.2], [0.2, 0.6]])
    model = learners.from_state_dict(
        _snapshot(
            {"W_": W, "Ainv_": Ainv, "n_mistakes_": 5}, A=np.array([[2.0, -0.5], [-0.5, 2.0]])
        )
    )
    assert type(model) is MatrixMultitaskPerceptron
    assert model.decision_one(np.array([1.0, -1.0]), 1) == -1.0
    np.testing.assert_array_equal(model.state_dict()["state.Ainv_"], Ainv)
