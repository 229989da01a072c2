"""`streams-k8s schedule`: the simulator on JSON documents, including the seed's ConfigMaps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from scheduler_fixtures import SHIPPED_DESCHEDULER, SHIPPED_SCHEDULER
from streams_k8s.cli import main


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def document(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "statefulSet": {"name": "pool", "replicas": 3, "namespace": "ns"},
        "capacity": 10,
        "nodes": [
            {"name": "n0", "zone": "a"},
            {"name": "n1", "zone": "b"},
            {"name": "n2", "zone": "c"},
            {"name": "n3", "unschedulable": True},
        ],
        "pods": [
            {"name": "pool-0", "node": "n0"},
            {"name": "pool-1", "node": "n1"},
            {"name": "pool-2", "node": "n2"},
        ],
        "vpods": [
            {"key": "ns/src", "vreplicas": 6, "placements": []},
            {"key": "ns/other", "vreplicas": 9, "placements": [{"podName": "pool-0", "vreplicas": 9}]},
        ],
        "policy": configmap("config-kafka-scheduler", SHIPPED_SCHEDULER),
        "deschedulerPolicy": configmap("config-kafka-descheduler", SHIPPED_DESCHEDULER),
        "schedule": "ns/src",
    }
    doc.update(overrides)
    return doc


def run(tmp_path: Path, doc: Any, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "input.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    result = CliRunner().invoke(main, ["schedule", "--input", str(path), *args])
    return result.exit_code, result.stdout, result.stderr


def test_schedule_with_the_shipped_configmaps(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, document())
    assert code == 0
    result = json.loads(out)
    assert result["error"] is None
    # zones b and c are empty for this vpod; pool-0 has 1 slot left.
    assert result["placements"] == [
        {"podName": "pool-0", "vreplicas": 1},
        {"podName": "pool-1", "vreplicas": 3},
        {"podName": "pool-2", "vreplicas": 2},
    ]
    state = result["state"]
    assert state["freeCap"] == [0, 7, 8]
    assert state["numZones"] == 3
    assert state["reserved"] == {"ns/src": {"pool-0": 1, "pool-1": 3, "pool-2": 2}}


def test_descheduler_from_configmap_removes_vreplicas(tmp_path: Path) -> None:
    vpods = [
        {
            "key": "ns/src",
            "vreplicas": 2,
            "placements": [{"podName": f"pool-{i}", "vreplicas": 1} for i in range(3)],
        }
    ]
    code, out, _ = run(tmp_path, document(vpods=vpods))
    assert code == 0
    assert json.loads(out)["placements"] == [
        {"podName": "pool-0", "vreplicas": 1},
        {"podName": "pool-1", "vreplicas": 1},
    ]


def test_maxfillup_partial_result_and_error(tmp_path: Path) -> None:
    doc = document(policy={"type": "MAXFILLUP"}, vpods=[{"key": "ns/src", "vreplicas": 35}])
    doc.pop("deschedulerPolicy")
    code, out, _ = run(tmp_path, doc)
    assert code == 0
    result = json.loads(out)
    assert sum(p["vreplicas"] for p in result["placements"]) == 30
    assert "(left: 5)" in result["error"]


def test_reserved_placements_count(tmp_path: Path) -> None:
    doc = document(
        reserved={"ns/other": [{"podName": "pool-1", "vreplicas": 10}, {"podName": "pool-0", "vreplicas": 0}]}
    )
    code, out, _ = run(tmp_path, doc)
    assert code == 0
    result = json.loads(out)
    assert {p["podName"] for p in result["placements"]} == {"pool-0", "pool-2"}


def test_autoscale_and_scale_down(tmp_path: Path) -> None:
    doc = document(policy={"type": "MAXFILLUP"}, vpods=[{"key": "ns/src", "vreplicas": 45}])
    doc.pop("deschedulerPolicy")
    code, out, _ = run(tmp_path, doc, "--autoscale")
    assert code == 0
    assert json.loads(out) == {"replicas": 5, "evictions": [], "clearAnnotations": []}
    doc["vpods"] = [{"key": "ns/src", "vreplicas": 5, "placements": [{"podName": "pool-2", "vreplicas": 5}]}]
    code, out, _ = run(tmp_path, doc, "--autoscale")
    assert json.loads(out)["replicas"] == 3  # the triggered run never scales down
    code, out, _ = run(tmp_path, doc, "--autoscale", "--scale-down")
    assert json.loads(out)["replicas"] == 1


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{not json", "not valid JSON"),
        ({"capacity": 1}, "statefulSet: Field required"),
        (document(capacity=0), "capacity: Input should be greater than 0"),
        (document(schedule="ns/nope"), "no vpod with key 'ns/nope'"),
        (document(policy={"type": "SPREAD"}), "the only policy type"),
        (
            document(policy={"predicates": "[]", "priorities": '[{"Name": "X", "Weight": 1}]'}),
            "unknown priority 'X'",
        ),
        (
            document(
                policy={"predicates": "[]", "priorities": '[{"Name": "LowestOrdinalPriority", "Weight": 12}]'}
            ),
            "outside 0..10",
        ),
        (document(vpods=[{"key": "ns/src", "vreplicas": -1}]), "vpods.0.vreplicas"),
    ],
)
def test_bad_input_is_one_line_on_stderr(tmp_path: Path, doc: Any, message: str) -> None:
    code, out, err = run(tmp_path, doc)
    assert code == 2
    assert out == ""
    assert message in err
    assert err.count("\n") == 1
