"""Dockerfile, docker-compose.yml and deploy/ refer to real commands, settings, routes and metrics.

They cannot be built here, so these tests read them and check every reference
against the code: ``omtl`` subcommands against the CLI parser, environment
variables against :class:`service.settings.Settings`, probe paths against the
app's routes, ports against the settings' defaults and dashboard queries
against the metrics the service exports.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase
from pydantic import AliasChoices

from service import metrics
from service.api.app import create_app
from service.cli import build_parser
from service.settings import Settings
from tests.test_layering import imported_packages

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
#: Environment variables the image may set that are not settings.
RUNTIME_ENV = {"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "OPENBLAS_NUM_THREADS"}


def _subcommands() -> set[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return set(sub.choices)  # type: ignore[arg-type]


def _settings_env() -> set[str]:
    names = set()
    for name, field in Settings.model_fields.items():
        names.add(f"OMTL_{name.upper()}")
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(a for a in alias.choices if isinstance(a, str) and a.isupper())
    return names


def _dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _routes() -> set[str]:
    """Paths the API serves (from its OpenAPI document; building the app needs no Redis)."""
    app = create_app(Settings(redis_url="redis://unused:6379/0"))
    return set(app.openapi()["paths"])


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return doc


def _k8s_docs() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def _omtl_containers() -> list[dict[str, Any]]:
    out = []
    for doc in _k8s_docs():
        if doc["kind"] in ("Deployment", "StatefulSet"):
            for c in doc["spec"]["template"]["spec"]["containers"]:
                if c["image"].split(":")[0] == "omtl":
                    out.append(c)
    return out


def test_the_cli_has_the_commands_the_packaging_runs() -> None:
    assert {"up", "api", "worker", "replay", "annotate"} <= _subcommands()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["omtl"] == "service.cli:main"


def test_dockerfile_is_slim_non_root_and_runs_omtl() -> None:
    instructions = _dockerfile()
    froms = [rest for word, rest in instructions if word == "FROM"]
    assert froms and all("slim" in f for f in froms)
    users = [rest for word, rest in instructions if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    (entry,) = [json.loads(rest) for word, rest in instructions if word == "ENTRYPOINT"]
    assert entry == ["omtl"]
    (cmd,) = [json.loads(rest) for word, rest in instructions if word == "CMD"]
    assert cmd[0] in _subcommands()
    for word, rest in instructions:
        if word == "ENV":
            for name in re.findall(r"(\w+)=", rest):
                if name.startswith(("OMTL_", "REDIS")):
                    assert name in _settings_env(), f"Dockerfile sets unknown setting {name}"
        if word == "COPY" and not rest.startswith("--from"):
            for src in shlex.split(rest)[:-1]:
                assert (ROOT / src).exists(), f"Dockerfile copies missing {src}"
    exposed = {int(p) for word, rest in instructions if word == "EXPOSE" for p in rest.split()}
    defaults = Settings(redis_url="redis://x")
    assert {defaults.api_port, defaults.worker_metrics_port} <= exposed


def _first_party_packages() -> set[str]:
    """Top-level packages of this repository (directories holding an ``__init__.py``)."""
    return {p.parent.name for p in ROOT.glob("*/__init__.py")}


def _imported_by_service() -> set[str]:
    """First-party top-level packages that modules under ``service/`` import."""
    names = set()
    for path in (ROOT / "service").rglob("*.py"):
        names |= imported_packages(path.read_text())
    return (names & _first_party_packages()) | {"service"}


def test_the_wheel_and_the_image_ship_every_package_the_service_imports() -> None:
    needed = _imported_by_service()
    assert {"service", "learners", "evaluation"} <= needed
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    included = {pattern.rstrip("*") for pattern in find["find"]["include"]}
    assert needed <= included, f"pyproject.toml does not package {needed - included}"
    copied = {
        shlex.split(rest)[0].rstrip("/")
        for word, rest in _dockerfile()
        if word == "COPY" and not rest.startswith("--from")
    }
    assert needed <= copied, f"the Dockerfile does not copy {needed - copied}"
    assert "bench" not in included | copied


def test_dockerignore_keeps_the_context_small() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "tests", "bench"} <= ignored


def test_compose_runs_redis_api_and_worker_from_one_image() -> None:
    services = _compose()["services"]
    assert {"redis", "api", "worker"} <= set(services)
    redis = services["redis"]
    assert "--appendonly" in redis["command"] and "yes" in redis["command"]
    assert any(v.endswith(":/data") for v in redis["volumes"])
    assert services["api"]["image"] == services["worker"]["image"]
    assert services["api"]["command"] == ["api"] and services["worker"]["command"] == ["worker"]
    for name in ("redis", "api", "worker"):
        assert "healthcheck" in services[name], name
    for name in ("api", "worker"):
        env = services[name]["environment"]
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        unknown = set(env) - _settings_env()
        assert not unknown, f"{name} sets unknown settings {unknown}"
        assert services[name]["command"][0] in _subcommands()
    for name in ("prometheus", "grafana"):
        for volume in services[name]["volumes"]:
            assert (ROOT / volume.split(":")[0]).exists(), volume


def test_compose_healthchecks_use_real_routes_and_ports() -> None:
    services = _compose()["services"]
    paths = _routes()
    api_check = " ".join(services["api"]["healthcheck"]["test"])
    (path,) = re.findall(r"127\.0\.0\.1:8000(/[\w/]+)", api_check)
    assert path in paths
    assert services["api"]["environment"]["OMTL_API_PORT"] == "8000"
    assert "9101/metrics" in " ".join(services["worker"]["healthcheck"]["test"])
    assert services["worker"]["environment"]["OMTL_WORKER_METRICS_PORT"] == "9101"


def test_kubernetes_manifests_reference_real_commands_settings_and_routes() -> None:
    docs = _k8s_docs()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {("Deployment", "omtl-api"), ("Deployment", "omtl-worker")} <= kinds
    assert ("StatefulSet", "omtl-redis") in kinds
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    unknown = set(config["data"]) - _settings_env()
    assert not unknown, f"ConfigMap sets unknown settings {unknown}"
    paths = _routes()
    containers = _omtl_containers()
    assert sorted(c["args"][0] for c in containers) == ["api", "worker"]
    for c in containers:
        assert c["args"][0] in _subcommands()
        for probe in ("readinessProbe", "livenessProbe"):
            http = c.get(probe, {}).get("httpGet")
            if http:
                assert http["path"] in paths, http
        for env in c.get("env", []):
            assert env["name"] in _settings_env() | RUNTIME_ENV
    listed = set(
        yaml.safe_load((DEPLOY / "kubernetes/kustomization.yaml").read_text())["resources"]
    )
    assert listed == {p.name for p in (DEPLOY / "kubernetes").glob("*.yaml")} - {
        "kustomization.yaml"
    }


def test_prometheus_scrapes_the_api_and_worker_ports() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())
    targets = {
        t
        for job in config["scrape_configs"]
        for sc in job.get("static_configs", [])
        for t in sc["targets"]
    }
    defaults = Settings(redis_url="redis://x")
    assert targets == {f"api:{defaults.api_port}", f"worker:{defaults.worker_metrics_port}"}
    services = _compose()["services"]
    assert {t.split(":")[0] for t in targets} <= set(services)


def _exported_metric_names() -> set[str]:
    names = set()
    for obj in vars(metrics).values():
        if not isinstance(obj, MetricWrapperBase):
            continue
        for family in obj.describe():
            base = family.name
            names.add(base)
            if family.type == "counter":
                names.add(base + "_total")
            if family.type == "histogram":
                names.update(base + s for s in ("_bucket", "_count", "_sum"))
    return names


def test_grafana_dashboard_queries_exported_metrics() -> None:
    dashboard = json.loads((DEPLOY / "grafana/dashboards/omtl.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {name for e in exprs for name in re.findall(r"\bomtl_\w+", e)}
    assert used, "the dashboard queries no omtl_ metric"
    missing = used - _exported_metric_names()
    assert not missing, f"the dashboard queries metrics the service does not export: {missing}"
    for required in ("omtl_events_total", "omtl_online_mistakes_total", "omtl_log_lag_entries"):
        assert required in used
    provisioning = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/omtl.yml").read_text())
    assert provisioning["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"


@pytest.mark.parametrize("name", ["OMTL_NOT_A_SETTING", "REDIS_HOST"])
def test_the_settings_check_rejects_unknown_names(name: str) -> None:
    assert name not in _settings_env()
    assert "REDIS_URL" in _settings_env() and "OMTL_STREAM_MAXLEN" in _settings_env()
