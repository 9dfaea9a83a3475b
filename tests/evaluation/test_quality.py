"""The pieces of ``python -m bench.quality`` on tiny data (VW and River: the ``bench`` extra)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.perf.throughput_streams import make_stream
from bench.quality.labels import crossing, our_points
from bench.quality.online import OnlineSettings, run_stream
from bench.quality.ours import learner_grid
from bench.quality.peers import PeerConfig, PeerRows, run_online, train_then_test
from bench.quality.stats import mean_ci, paired_difference
from bench.quality.streams import StreamSpec, event_orders, tuning_order
from evaluation.common import LearnerSetup, RowSource, accuracy_figures, score_rows, stream_pass
from evaluation.dataset import Dataset

pytest.importorskip("vowpalwabbit", reason="VW is a bench extra (pip install vowpalwabbit)")
pytest.importorskip("river", reason="River is a bench extra (pip install river)")


def _tiny(n: int = 400) -> Dataset:
    s = make_stream(3, 6, n, seed=5)
    return Dataset("tiny", s.X, s.y, s.task.astype(np.int64), ["a", "b", "c"])


def test_mean_ci_and_paired_difference_use_the_t_interval() -> None:
    got = mean_ci([1.0, 2.0, 3.0])
    assert got["mean"] == 2.0
    assert got["ci95"] == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    diff = paired_difference([0.10, 0.12, 0.11], [0.20, 0.21, 0.23])
    assert diff["mean"] == pytest.approx(-0.103333, rel=1e-4)
    assert diff["excludes_zero"] == 1.0
    assert paired_difference([0.1, 0.3], [0.2, 0.2])["excludes_zero"] == 0.0


def test_tuning_shuffle_differs_from_every_evaluation_shuffle() -> None:
    orders = event_orders(50, 3, seed=0)
    tune = tuning_order(50, seed=0)
    assert all(sorted(o.tolist()) == list(range(50)) for o in orders)
    assert not any(np.array_equal(tune, o) for o in orders)
    assert np.array_equal(orders[1], event_orders(50, 3, seed=0)[1])


def test_grid_scales_the_first_step_parameter_by_ten_either_way() -> None:
    assert learner_grid("stl") == [{}]
    grid = learner_grid("pa-individual")
    assert grid[0] == {} and grid[1]["C"] * 100 == pytest.approx(grid[2]["C"])


def test_vw_scores_come_before_learning_and_budgets_cap_the_labels() -> None:
    data = _tiny()
    rows = PeerRows(data)
    order = np.arange(data.n)
    scores = run_online(PeerConfig("vw", "q", "logistic", 0.5), rows, order)
    assert scores[0] == 0.0  # nothing learned before the first event
    assert (np.where(scores >= 0, 1.0, -1.0) != data.y).mean() < 0.4
    train, test = order[:300], order[300:]
    (used, at_40), (used_all, _) = train_then_test(
        PeerConfig("vw", "copy", "logistic", 0.5), rows, train, test, [40, 1000]
    )
    assert used == 40 and at_40.shape == (100,)
    assert used_all == 300  # a budget the pass never reaches: the final model
    alone = train_then_test(PeerConfig("vw", "copy", "logistic", 0.5), rows, train, test, [40])
    np.testing.assert_allclose(alone[0][1], at_40)  # reading at 40 does not disturb the pass
    active = PeerConfig("vw", "q", "logistic", 0.5, mellowness=1e-3)
    ((used_active, _),) = train_then_test(active, rows, train, test, [300])
    assert 0 < used_active < 300  # --active skips labels it is sure of


def test_one_stream_measures_every_system_on_the_same_orders() -> None:
    data = _tiny()
    settings = OnlineSettings(
        learners=["stl", "pa-individual"],
        default="stl",
        runs=3,
        vw_rates=(0.5,),
        river_rates=(0.1,),
        seconds=30,
    )
    entry = run_stream(StreamSpec("tiny", lambda quick: data), settings)
    systems = entry["peers"]["systems"]
    assert set(systems) == {
        "vw pooled",
        "vw q",
        "vw copy",
        "river per-task",
        "river pooled",
        "river shared+task",
    }
    # stl has no tuning grid: the default run is the same computation as the tuned one
    assert entry["default"]["rates"] == entry["ours"]["stl"]["rates"]
    best = min(systems.values(), key=lambda v: v["mean"])
    assert entry["best_peer"]["mean"] == best["mean"]
    diff = entry["default_vs_best_peer"]
    expected = np.mean(np.subtract(entry["default"]["rates"], best["rates"]))
    assert diff["mean"] == pytest.approx(expected)
    assert all(0.0 <= r <= 1.0 for v in systems.values() for r in v["rates"])


def test_active_learner_read_at_budgets_equals_a_pass_stopped_there() -> None:
    data = _tiny()
    source = RowSource(data)
    setup = LearnerSetup.create(data, "peer", {}, budget=None)
    train, test = np.arange(300), np.arange(300, 400)
    at_20, at_5000 = our_points(setup, source, train, test, [20, 5000], seed=3)
    assert at_20["labels"] == 20 and 20 < at_5000["labels"] <= 300
    model = setup.build(seed=3, rounds=300)
    consumed = stream_pass(model, source, train, budget=20).consumed
    assert consumed.sum() == 20
    expected = accuracy_figures(score_rows(model, source, test), data.y[test])
    assert at_20["accuracy"] == expected["accuracy"] and at_20["auc"] == expected["auc"]


def test_crossing_is_the_smallest_budget_reaching_the_target() -> None:
    curve = {f: {"auc": {"mean": a}} for f, a in ((0.05, 0.6), (0.1, 0.72), (0.25, 0.71))}
    assert crossing(curve, 0.7) == 0.1
    assert crossing(curve, 0.9) is None
