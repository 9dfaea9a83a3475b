"""The command line as a user meets it: a fast ``--version``, ``omtl up`` refusing busy
ports before it announces anything, ``omtl redis-cli`` on the embedded server's port,
progress bars only on a terminal, and ``omtl export`` / ``import`` / ``rollback``."""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.cli import build_parser, command_modules, main, overview_parser
from service.cli.annotate_cmd import annotate
from service.cli.export_cmd import export_to, import_from, rollback_to
from service.cli.progress import progress
from service.cli.replay_cmd import replay
from service.settings import Settings
from service.store import keys
from service.worker import Worker
from tests.api import conftest as api_fixtures
from tests.api.test_cli import AsgiApi, _dataset

api_settings = api_fixtures.api_settings
client = api_fixtures.client

ROOT = Path(__file__).resolve().parents[1]
OMTL = str(Path(sys.executable).parent / "omtl")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env.pop("REDIS_URL", None)
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _fresh_python(code: str) -> list[str]:
    """The lines ``code`` prints in a new interpreter (which must exit with 0)."""
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_version_imports_neither_numpy_nor_the_commands() -> None:
    code = (
        "import sys, json\n"
        "from service.cli import main\n"
        "main(['--version'])\n"
        "heavy = ('numpy', 'scipy', 'numba', 'learners', 'redis', 'fastapi', 'service.cli.up_cmd')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    version, loaded = _fresh_python(code)
    assert version.startswith("omtl ") and json.loads(loaded) == []
    # the console script answers the same
    run = subprocess.run([OMTL, "--version"], env=_env(), capture_output=True, text=True)
    assert run.stdout == version + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return set(sub.choices)  # type: ignore[arg-type]


def test_every_command_module_declares_the_subcommands_it_adds() -> None:
    """``COMMANDS``, read from the source, is what each module's ``register`` adds; together
    the modules add every subcommand of the whole parser, each once."""
    owners = command_modules()
    for module in sorted(set(owners.values())):
        declared = {name for name, owner in owners.items() if owner == module}
        assert _subcommands(build_parser([module])) == declared, module
    assert set(owners) == _subcommands(build_parser())
    for path in sorted((ROOT / "service" / "cli").glob("*.py")):
        if "\ndef register(" in path.read_text():
            assert path.stem in owners.values(), f"{path.name} adds commands but declares none"


#: Modules a command other than their own must not import.
HEAVY = (
    "numpy",
    "scipy",
    "numba",
    "learners",
    "fastapi",
    "evaluation",
    "service.cli.up_cmd",
    "service.cli.evaluate_cmd",
    "service.cli.annotate_cmd",
)


def test_a_command_imports_only_its_own_module() -> None:
    """``omtl keys token`` runs without numpy, numba or the other commands' modules (a
    fraction of the second the whole parser's imports take)."""
    code = (
        "import sys, json\n"
        "from service.cli import main\n"
        "code = main(['keys', 'token'])\n"
        f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]))\n"
    )
    token, result = _fresh_python(code)
    assert len(token) > 20 and json.loads(result) == [0, []]
    run = subprocess.run([OMTL, "rollback", "--help"], env=_env(), capture_output=True, text=True)
    assert run.returncode == 0 and "usage: omtl rollback" in run.stdout


def test_annotate_starts_without_the_learners() -> None:
    """``omtl annotate`` answers label requests from a dataset: it needs neither the learners
    nor numba (its module borrows ``default_url`` from ``omtl replay``'s, which imports the
    learners only for multiview rounds)."""
    code = (
        "import sys, json\n"
        "from service.cli import main\n"
        "try:\n"
        "    main(['annotate', '--help'])\n"
        "except SystemExit as exit:\n"
        "    loaded = [m for m in ('numba', 'learners') if m in sys.modules]\n"
        "    print(json.dumps([exit.code, loaded]))\n"
    )
    *shown, result = _fresh_python(code)
    assert json.loads(result) == [0, []] and "usage: omtl annotate" in shown[0]


def test_the_top_level_help_comes_from_the_declarations_alone() -> None:
    """``omtl --help`` and an unknown command's error list every command with its help, as
    the whole parser does, and import no command module."""
    assert overview_parser().format_help() == build_parser().format_help()
    code = (
        "import sys, json\n"
        "from service.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exit:\n"
        f"    print(json.dumps([exit.code, [m for m in {HEAVY!r} if m in sys.modules]]))\n"
    )
    *shown, result = _fresh_python(code)
    assert json.loads(result) == [0, []]
    for name, help_text in _declared_help().items():
        assert any(name in line and help_text[:30] in line for line in shown), name
    run = subprocess.run([OMTL, "nope"], env=_env(), capture_output=True, text=True)
    assert run.returncode == 2 and "invalid choice: 'nope'" in run.stderr
    assert "'redis-cli'" in run.stderr


def _declared_help() -> dict[str, str]:
    """Every subcommand's one-line help, from the modules' ``COMMANDS`` (imported)."""
    out: dict[str, str] = {}
    for module in set(command_modules().values()):
        out.update(importlib.import_module(f"service.cli.{module}").COMMANDS)
    return out


def _bound() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s, s.getsockname()[1]


@pytest.mark.parametrize("which", ["--port", "--metrics-port"])
def test_up_refuses_a_busy_port_before_announcing(tmp_path: Path, which: str) -> None:
    taken, port = _bound()
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    other = free.getsockname()[1]
    free.close()
    ports = {"--port": str(other), "--metrics-port": str(other)}
    ports[which] = str(port)
    try:
        run = subprocess.run(
            [OMTL, "up", "--data-dir", str(tmp_path), *[a for kv in ports.items() for a in kv]],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        taken.close()
    assert run.returncode == 1
    assert "omtl is up" not in run.stdout
    assert f"port {port} on 127.0.0.1 is in use" in run.stderr and which in run.stderr
    assert not (tmp_path / "redis" / "url").exists()  # nothing was started


@pytest.mark.slow
def test_redis_cli_runs_commands_on_redis_url_and_on_the_recorded_embedded_server(
    tmp_path: Path, redis_url: str, r: redis.Redis
) -> None:
    key = "omtl:{m}:log"
    run = subprocess.run(
        [OMTL, "redis-cli", "XADD", key, "5-1", "k", "e", "task", "spam"],
        env=_env(REDIS_URL=redis_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "5-1\n" and r.xlen(key) == 1
    # without REDIS_URL: the URL `omtl up` recorded in the data directory
    (tmp_path / "redis").mkdir()
    (tmp_path / "redis" / "url").write_text(redis_url + "\n")
    run = subprocess.run(
        [OMTL, "redis-cli", "--data-dir", str(tmp_path), "XRANGE", key, "-", "+"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.stdout.splitlines() == ["5-1", "k", "e", "task", "spam"]
    run = subprocess.run(
        [OMTL, "redis-cli", "--data-dir", str(tmp_path), "HGET", "nope"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and run.stdout.startswith("(error) ")
    empty = subprocess.run(
        [OMTL, "redis-cli", "--data-dir", str(tmp_path / "none"), "PING"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert empty.returncode == 2 and "omtl up" in empty.stderr


def test_progress_bars_are_drawn_on_request_and_count_what_is_done(
    client: TestClient, rb: redis.Redis, api_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert progress(10, "x", "event").disable  # tests do not run on a terminal
    monkeypatch.setenv("OMTL_PROGRESS", "1")
    ds = _dataset(40)
    api = AsgiApi(client)
    assert client.put("/models/toy", json={"learner": "ipl", "n_features": 4}).status_code == 201
    drawn = io.StringIO()
    with progress(ds.n, "replay toy", "event", file=drawn) as bar:
        replay(api, ds, "toy", batch=16, bar=bar)
        assert bar.n == 40
    assert "replay toy" in drawn.getvalue() and "40/40" in drawn.getvalue()
    Worker(api_settings, models=["toy"]).run(until_idle=True, timeout=30)
    with progress(5, "annotate toy", "label", file=io.StringIO()) as bar:
        stats = annotate(api, ds, "toy", after="0-0", limit=5, timeout=10, bar=bar)
        assert bar.n == stats.requests == 5


class AsgiRaw:
    """:class:`service.cli.export_cmd.RawApi` over the in-process test client."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def raw(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, bytes]:
        headers = {"content-type": content_type} if content_type else {}
        r = self.client.request(method, path, content=body, headers=headers)
        return r.status_code, r.content


def test_export_import_and_rollback_commands(
    client: TestClient, rb: redis.Redis, api_settings: Settings, tmp_path: Path
) -> None:
    """What the commands call, against the real app (bytes bodies through the test client)."""
    api = AsgiRaw(client)
    keep = api_settings.model_copy(update={"snapshot_keep": 3, "snapshot_keep_every_s": 0.0})
    assert client.put("/models/a", json={"learner": "cmtl", "n_features": 3}).status_code == 201
    for i in range(2):
        events = [{"task": "t", "x": [i, 1, 0], "y": 1}, {"task": "u", "x": [0, i, 1], "y": -1}]
        assert client.post("/events", json={"model": "a", "events": events}).status_code == 202
        Worker(keep, models=["a"]).run(until_idle=True, timeout=30)
    path = tmp_path / "a.omtl.zip"
    size = export_to(api, "a", path)
    assert size == path.stat().st_size > 0 and zipfile.is_zipfile(path)
    info = import_from(api, path, "b")
    assert info["name"] == "b" and info["tasks"] == ["t", "u"]
    assert np.array_equal(
        np.frombuffer(rb.hget(keys.snapshot_key("a"), "arrays") or b"", np.uint8),
        np.frombuffer(rb.hget(keys.snapshot_key("b"), "arrays") or b"", np.uint8),
    )
    assert rollback_to(api, "a", None)["versions"] == [2, 1]
    rolled = rollback_to(api, "a", 1)
    assert rolled["counts"]["events"] == 2
    assert main(["export", "a", str(tmp_path / "x"), "--url", "http://127.0.0.1:9"]) == 1
