"""``omtl evaluate`` and ``omtl compare`` end to end through the command line."""

from __future__ import annotations

import json

import numpy as np

from evaluation.compare import split_params
from service.cli import main


def test_evaluate_prints_a_table_and_writes_the_json_document(tmp_path, capsys):
    out = tmp_path / "out.json"
    code = main(
        [
            "evaluate",
            "synthetic-saha",
            "--learner",
            "cmtl",
            "--protocol",
            "split",
            "--runs",
            "3",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "accuracy" in text and "weight correlation" in text and "task3" in text
    doc = json.loads(out.read_text())
    assert doc["learner"] == "cmtl" and doc["protocol"] == "split" and doc["runs"] == 3
    for key in (
        "accuracy_mean",
        "accuracy_std",
        "mistakes_mean",
        "mistake_rate_mean",
        "queries_mean",
    ):
        assert key in doc["metrics"]
    assert [e["task"] for e in doc["per_task"]] == ["task1", "task2", "task3"]
    assert "accuracy_mean" in doc["per_task"][0]
    assert np.array(doc["relation_matrix"]).shape == (3, 3)


def test_evaluate_reads_a_user_npz_and_parses_json_parameters(tmp_path, capsys):
    path = tmp_path / "mine.npz"
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    task = np.arange(60) % 2
    np.savez(path, X=X, y=np.where(X[:, 0] > 0, 1, 0), task=task)
    out = tmp_path / "o.json"
    code = main(
        [
            "evaluate",
            str(path),
            "--learner",
            "cmtl",
            "--param",
            "A=[[2, 0.5], [0.5, 2]]",
            "--protocol",
            "online",
            "--runs",
            "2",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["params"] == {"A": [[2, 0.5], [0.5, 2]]}
    assert np.allclose(doc["relation_matrix"], [[2, 0.5], [0.5, 2]])


def test_errors_exit_with_code_2_and_a_message(capsys):
    assert main(["evaluate", "no-such-set", "--learner", "ipl"]) == 2
    assert "unknown dataset" in capsys.readouterr().err
    assert main(["evaluate", "synthetic-saha", "--learner", "ipl", "--param", "b=1"]) == 2
    assert "unknown parameter" in capsys.readouterr().err


def test_compare_uses_the_same_shuffles_and_writes_a_list_and_a_plot(tmp_path, capsys):
    out, png = tmp_path / "cmp.json", tmp_path / "cmp.png"
    code = main(
        [
            "compare",
            "synthetic-saha",
            "--learners",
            "ipl,cmtl,random-query",
            "--runs",
            "2",
            "--param",
            "cmtl.b=0",
            "--json",
            str(out),
            "--plot",
            str(png),
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert "random-query" in table and "same shuffles" in table
    docs = json.loads(out.read_text())
    assert [d["learner"] for d in docs] == ["ipl", "cmtl", "random-query"]
    # cmtl with b = 0 is ipl (A = I): identical shuffles give identical figures
    assert docs[1]["params"] == {"b": 0}
    assert docs[0]["metrics"] == docs[1]["metrics"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_online_plots_mistake_rate_curves(tmp_path):
    png = tmp_path / "online.png"
    code = main(
        [
            "compare",
            "synthetic-rom:n=100",
            "--learners",
            "ipl,rom-rda",
            "--protocol",
            "online",
            "--runs",
            "1",
            "--plot",
            str(png),
        ]
    )
    assert code == 0 and png.stat().st_size > 1000


def test_unscoped_parameters_go_to_every_learner_that_declares_them():
    got = split_params({"append_bias": True, "cmtl.b": 1}, ["ipl", "cmtl"])
    assert got == {"ipl": {"append_bias": True}, "cmtl": {"append_bias": True, "b": 1}}


def test_datasets_lists_every_built_in_name(capsys):
    assert main(["datasets"]) == 0
    text = capsys.readouterr().out
    for name in ("landmine", "landmine19", "school", "tdt2", "sentiment4", "synthetic-saha"):
        assert f"\n{name} " in f"\n{text}"
