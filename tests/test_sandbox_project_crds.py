"""The project's CRDs (generated from the models) are served with their short names and status
subresources, and accept the example Jobs with their schema defaults applied and their CEL rules
enforced: on the sandbox, which installs them at start, and on the real control plane, where
`kubectl apply --server-side -f crds/` installed them (`api_server_fixtures`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from api_server import ApiServer
from streams_k8s.api import KINDS

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["api_server_fixtures"]
pytestmark = [pytest.mark.sandbox(simulate=False)]
GROUP = "streams.ibm.com"


def example_jobs() -> list[dict[str, Any]]:
    docs = [
        d
        for path in sorted((ROOT / "examples").rglob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text())
    ]
    return [d for d in docs if isinstance(d, dict) and d.get("kind") == "Job"]


async def test_every_streams_kind_is_served_with_its_short_name_and_status(api_server: ApiServer) -> None:
    status, discovery = await api_server.call("GET", f"/apis/{GROUP}/v1")
    assert status == 200
    served = {r["name"]: r for r in discovery["resources"]}
    assert served["streamsjobs"]["shortNames"] == ["stj"]
    assert served["streamspes"]["shortNames"] == ["stp"]
    kinds = {name for name in served if "/" not in name}
    assert len(kinds) == len(KINDS)
    assert {f"{kind}/status" for kind in kinds} <= set(served)


async def test_example_jobs_are_accepted_and_invalid_ones_refused(api_server: ApiServer) -> None:
    jobs = example_jobs()
    if not jobs:
        pytest.skip("no example Jobs in examples/ in this checkout")
    path = f"/apis/{GROUP}/v1/namespaces/{api_server.namespace}/streamsjobs"
    for job in jobs:
        job = {**job, "metadata": {**job["metadata"], "namespace": api_server.namespace}}
        status, created = await api_server.call("POST", path, job)
        assert status == 201, created
        assert created["metadata"]["generation"] == 1
    bad = copy.deepcopy(jobs[0])
    bad["metadata"] = {"name": "two-sources"}
    bad["spec"]["bundle"]["file"] = {"path": "/a.sab"}
    bad["spec"]["bundle"]["http"] = {"url": "https://example.com/a.sab"}
    status, refused = await api_server.call("POST", path, bad)
    assert status == 422
    assert refused["details"]["causes"][0]["field"] == "spec.bundle"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"regions": [{"alias": "Score", "min": 8, "max": 2}]}, "a region's min must not be over its max"),
        ({"regions": [{"alias": "Score", "max": 5000}]}, "1000"),
        ({"lowUtilization": 0.9}, "the band must hold the target"),
    ],
)
async def test_bad_autoscaler_settings_are_refused_at_apply_time(
    api_server: ApiServer, spec: dict[str, Any], message: str
) -> None:
    path = f"/apis/{GROUP}/v1/namespaces/{api_server.namespace}/streamsjobautoscalers"
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "JobAutoscaler",
        "metadata": {"name": "wordcount"},
        "spec": {"job": "wordcount", **spec},
    }
    status, refused = await api_server.call("POST", path, body)
    assert status == 422, refused
    assert message in refused["message"]
    status, accepted = await api_server.call("POST", path, {**body, "spec": {"job": "wordcount"}})
    assert status == 201, accepted
    assert accepted["spec"]["mode"] == "Recommend"  # the schema's defaults applied
