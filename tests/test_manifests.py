"""The deployment manifests: the kustomizations rendered (a small renderer of the features
they use, checked against ``kubectl kustomize`` where installed), every object validated
against the Kubernetes OpenAPI schemas (kubernetes-validate, offline, strict), and the
properties the service relies on: hardened pods, probes, resources sized from the model
memory budget, several workers with a PodDisruptionBudget, an autoscaled API; and the
Compose file's workers scaling without pinned names, ports or model lists."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "deploy" / "kubernetes"
CLUSTER = ROOT / "deploy" / "kubernetes-redis-cluster"
K8S_VERSION = "1.30.0"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in patch.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def render(root: Path) -> list[dict[str, Any]]:
    """What ``kustomize build root`` gives for the features used here: resources (files
    and directories), namespace, images (newTag), patches (``$patch: delete`` and
    merges)."""
    spec = _docs(root / "kustomization.yaml")[0]
    objects: list[dict[str, Any]] = []
    for entry in spec.get("resources", []):
        path = root / entry
        objects.extend(render(path) if path.is_dir() else _docs(path))
    for patch in spec.get("patches", []):
        for doc in _docs(root / patch["path"]):
            target = (doc["kind"], doc["metadata"]["name"])
            if doc.get("$patch") == "delete":
                objects = [o for o in objects if _key(o) != target]
            else:
                objects = [_merge(o, doc) if _key(o) == target else o for o in objects]
    for obj in objects:
        if "namespace" in spec and obj["kind"] != "Namespace":
            obj["metadata"]["namespace"] = spec["namespace"]
    for image in spec.get("images", []):
        for obj in objects:
            pod = obj.get("spec", {}).get("template", {}).get("spec", {})
            for c in pod.get("containers", []):
                if c["image"].split(":")[0] == image["name"]:
                    c["image"] = f"{image['name']}:{image['newTag']}"
    return objects


RENDERED = {"base": render(BASE), "redis-cluster": render(CLUSTER)}


def _by_key(variant: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {_key(o): o for o in RENDERED[variant]}


@pytest.mark.parametrize("variant", sorted(RENDERED))
def test_every_object_passes_the_kubernetes_schema(variant: str) -> None:
    objects = RENDERED[variant]
    assert len(objects) >= 8
    for obj in objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)  # raises on an error


@pytest.mark.parametrize(("variant", "path"), [("base", BASE), ("redis-cluster", CLUSTER)])
def test_the_renderer_agrees_with_kubectl_kustomize(variant: str, path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the python renderer above is checked alone")
    out = subprocess.run(
        [kubectl, "kustomize", str(path)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    theirs = sorted(_docs_text(out), key=_key)
    ours = sorted(RENDERED[variant], key=_key)
    assert theirs == ours


def _docs_text(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _pod_specs(variant: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (o["metadata"]["name"], o["spec"]["template"]["spec"])
        for o in RENDERED[variant]
        if o["kind"] in ("Deployment", "StatefulSet", "Job")
    ]


@pytest.mark.parametrize("variant", sorted(RENDERED))
def test_pods_run_hardened_with_requests_and_memory_limits(variant: str) -> None:
    pods = _pod_specs(variant)
    assert len(pods) >= 3
    for name, pod in pods:
        sc = pod["securityContext"]
        assert sc["runAsNonRoot"] is True, name
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert pod.get("automountServiceAccountToken") is False, name
        for c in pod["containers"]:
            csc = c["securityContext"]
            assert csc["allowPrivilegeEscalation"] is False, name
            assert csc["capabilities"]["drop"] == ["ALL"], name
            assert csc.get("privileged", False) is False, name
            assert {"cpu", "memory"} <= set(c["resources"]["requests"]), name
            assert "memory" in c["resources"]["limits"], name


def _mebibytes(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    for unit, factor in units.items():
        if quantity.endswith(unit):
            return float(quantity[: -len(unit)]) * factor
    return float(quantity) / 1024**2


def test_workers_are_several_with_a_disruption_budget_and_memory_for_their_models() -> None:
    objects = _by_key("base")
    worker = objects[("Deployment", "omtl-worker")]
    assert worker["spec"]["replicas"] >= 3
    pdb = objects[("PodDisruptionBudget", "omtl-worker")]
    assert pdb["spec"]["maxUnavailable"] == 1
    labels = worker["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # memory: the process, its share of models at the budget each, and one snapshot copy
    settings = objects[("ConfigMap", "omtl-settings")]["data"]
    budget_mib = int(settings["OMTL_MAX_MODEL_BYTES"]) / 1024**2
    per_worker = int(worker["metadata"]["annotations"]["omtl.io/models-per-worker"])
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    limit = _mebibytes(container["resources"]["limits"]["memory"])
    assert limit >= 512 + (per_worker + 1) * budget_mib
    assert _mebibytes(container["resources"]["requests"]["memory"]) <= limit
    # a worker serves its share of every model: no pinned model list, no fixed id
    assert container["args"] == ["worker"]
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"
    assert worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 30


def test_the_api_is_autoscaled_and_probed_on_its_health_endpoints() -> None:
    objects = _by_key("base")
    api = objects[("Deployment", "omtl-api")]
    hpa = objects[("HorizontalPodAutoscaler", "omtl-api")]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "omtl-api",
    }
    assert hpa["spec"]["minReplicas"] >= 2 and hpa["spec"]["maxReplicas"] > 2
    (container,) = api["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health/live"
    assert "cpu" in container["resources"]["requests"]  # the HPA's utilisation needs it


def test_the_cluster_variant_swaps_the_redis_and_points_at_every_node() -> None:
    objects = _by_key("redis-cluster")
    assert ("StatefulSet", "omtl-redis") not in objects
    redis_set = objects[("StatefulSet", "omtl-redis-cluster")]
    service = objects[("Service", "omtl-redis-cluster")]
    assert service["spec"]["clusterIP"] == "None"  # headless: a stable name per pod
    assert redis_set["spec"]["serviceName"] == "omtl-redis-cluster"
    args = redis_set["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--cluster-enabled") + 1] == "yes"
    url = objects[("ConfigMap", "omtl-settings")]["data"]["REDIS_URL"]
    assert url.startswith("redis+cluster://")
    nodes = url.removeprefix("redis+cluster://").split(",")
    n = redis_set["spec"]["replicas"]
    assert nodes == [f"omtl-redis-cluster-{i}.omtl-redis-cluster:6379" for i in range(n)]
    assert all(
        o["metadata"].get("namespace") == "omtl"
        for o in RENDERED["redis-cluster"]
        if o["kind"] != "Namespace"
    )


def test_compose_workers_scale_without_pinned_names_ports_or_models() -> None:
    """``docker compose up --scale worker=3`` needs a worker service with no container name
    and no published port, and each replica must serve its share of every model."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    worker = compose["services"]["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
    assert worker["command"] == ["worker"]
    env = worker["environment"]
    assert "OMTL_WORKER_ID" not in env
    assert env["REDIS_URL"] == compose["services"]["api"]["environment"]["REDIS_URL"]
    assert int(env["OMTL_LEASE_TTL_MS"]) > 0
    assert compose["services"]["worker"].get("deploy", {}).get("replicas", 1) >= 1
