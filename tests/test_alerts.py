"""The alert rules of deploy/prometheus: valid, unit-tested, wired, and about real metrics.

Runs ``promtool`` (Debian's ``prometheus`` package; ``.ci/run`` installs it) when it is
installed: ``check rules``, ``test rules`` (deploy/prometheus/alerts_test.yml) and
``check metrics`` on a real ``/metrics`` scrape of the app after a worker applied events.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import redis
import yaml
from fastapi.testclient import TestClient

from service.settings import Settings
from service.worker import Worker
from tests.api import conftest as api_fixtures

# the API fixtures (the real app on the session's Redis server), shared with tests/api
api_settings = api_fixtures.api_settings
client = api_fixtures.client

ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS = ROOT / "deploy" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian package 'prometheus')"
)

EXPECTED = {
    "OmtlWorkerDown",
    "OmtlModelNoHeartbeat",
    "OmtlModelFailed",
    "OmtlLogLagGrowing",
    "OmtlSnapshotStale",
    "OmtlDeadLettersIncreasing",
    "OmtlLearnerErrors",
    "OmtlOutlierTask",
    "OmtlApiErrors",
    "OmtlBackpressure",
}


def _rules() -> list[dict[str, object]]:
    doc = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=PROMETHEUS, input=stdin, capture_output=True, text=True, timeout=60
    )


def test_every_alert_is_there_and_prometheus_loads_the_file() -> None:
    assert {rule["alert"] for rule in _rules()} == EXPECTED
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in compose


def test_every_alert_has_a_unit_test() -> None:
    tests = yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text())
    firing = {
        case["alertname"]
        for test in tests["tests"]
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert firing == EXPECTED


def test_the_rules_use_only_metrics_the_service_exports(client: TestClient) -> None:
    exported = set(re.findall(r"^# TYPE (\w+) ", client.get("/metrics").text, re.MULTILINE))
    used = set()
    for rule in _rules():
        used |= set(re.findall(r"\b(omtl_\w+)", str(rule["expr"])))
    assert used, "no omtl metric in the rules"
    # a counter's samples are exported as <name>_total with TYPE <name>
    missing = {m for m in used if m not in exported and m.removesuffix("_total") not in exported}
    assert not missing, f"rules use metrics the service does not export: {missing}"


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    result = _promtool("check", "rules", "alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(EXPECTED)} rules found" in result.stdout


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    result = _promtool("test", "rules", "alerts_test.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@needs_promtool
def test_promtool_lints_a_real_metrics_scrape(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    events = [{"task": t, "x": [1, 0, 1], "y": y} for t, y in (("a", 1), ("b", -1), ("a", -1))]
    assert client.post("/events", json={"events": events}).status_code == 202
    assert client.post("/predict", json={"task": "a", "x": [0, 1, 0]}).status_code == 200
    Worker(api_settings, models=["default"]).run(until_idle=True, timeout=30)
    scrape = client.get("/metrics").text
    assert 'omtl_events_total{model="default",task="a"}' in scrape
    result = _promtool("check", "metrics", stdin=scrape)
    assert result.returncode == 0, result.stdout + result.stderr
