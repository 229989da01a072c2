"""The sandbox serves the project's CRDs (generated from the models, installed by default) and
accepts the example Jobs, with their schema defaults applied and their CEL rules enforced."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams_k8s.sandbox import ApiError, Sandbox

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.sandbox(simulate=False)]
GROUP = "streams.ibm.com"


def example_jobs() -> list[dict[str, Any]]:
    docs = [
        d
        for path in sorted((ROOT / "examples").rglob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text())
    ]
    return [d for d in docs if isinstance(d, dict) and d.get("kind") == "Job"]


def test_every_streams_kind_is_served_with_its_short_name_and_status(sandbox: Sandbox) -> None:
    served = {rt.plural: rt for rt in sandbox.registry.types.values() if rt.group == GROUP}
    assert served["streamsjobs"].short_names == ["stj"]
    assert served["streamspes"].short_names == ["stp"]
    assert all(rt.status_subresource for rt in served.values())
    assert len(served) == 8


def test_example_jobs_are_accepted_and_invalid_ones_refused(sandbox: Sandbox) -> None:
    jobs = example_jobs()
    if not jobs:
        pytest.skip("no example Jobs in examples/ in this checkout")
    rt = sandbox.registry.types[(GROUP, "streamsjobs")]
    for job in jobs:
        created = sandbox.registry.create(rt, "v1", "default", copy.deepcopy(job))
        assert created["metadata"]["generation"] == 1
    bad = copy.deepcopy(jobs[0])
    bad["metadata"]["name"] = "two-sources"
    bad["spec"]["bundle"]["file"] = {"path": "/a.sab"}
    bad["spec"]["bundle"]["http"] = {"url": "https://example.com/a.sab"}
    with pytest.raises(ApiError) as caught:
        sandbox.registry.create(rt, "v1", "default", bad)
    assert caught.value.code == 422
    assert caught.value.causes is not None
    assert caught.value.causes[0]["field"] == "spec.bundle"
