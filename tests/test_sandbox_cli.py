"""`streams-k8s sandbox`: runs standalone, writes a kubeconfig clients can use, fails cleanly."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api

from streams_k8s.cli import main

CLI = [sys.executable, "-c", "from streams_k8s.cli import main; main()", "sandbox"]


async def test_standalone_sandbox_serves_nodes_from_a_file(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        yaml.safe_dump(
            [
                {"name": "edge-1", "labels": {"tier": "edge"}, "cpu": "2", "memory": "4Gi"},
                {"name": "edge-2", "taints": [{"key": "dedicated", "value": "pe", "effect": "NoSchedule"}]},
            ]
        )
    )
    kubeconfig = tmp_path / "kubeconfig"
    args = ["--nodes", str(nodes), "--zones", "z1,z2", "--kubeconfig", str(kubeconfig), "--duration", "20"]
    proc = await asyncio.create_subprocess_exec(*CLI, *args, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert (await proc.stdout.readline()).decode().startswith("sandbox API server at http://127.0.0.1:")
        assert (await proc.stdout.readline()).decode().strip() == f"export KUBECONFIG={kubeconfig}"
        configuration = Configuration()
        await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        async with ApiClient(configuration) as api:
            listing = await CoreV1Api(api).list_node()
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)
    by_name = {n.metadata.name: n for n in listing.items}
    assert sorted(by_name) == ["edge-1", "edge-2"]
    assert by_name["edge-1"].metadata.labels["topology.kubernetes.io/zone"] == "z1"
    assert by_name["edge-1"].status.allocatable["cpu"] == "2"
    assert by_name["edge-2"].spec.taints[0].key == "dedicated"
    assert proc.returncode == 0


def test_bad_arguments_fail_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "nodes.yaml"
    bad.write_text("- {name: n, cores: 4}\n")
    for args, message in (
        (["--nodes", "missing.yaml"], "is neither a node count nor a readable YAML file"),
        (["--nodes", str(bad)], "unknown fields ['cores']"),
    ):
        result = CliRunner().invoke(main, ["sandbox", *args, "--kubeconfig", str(tmp_path / "k")])
        assert result.exit_code == 1
        lines = result.output.strip().splitlines()
        assert len(lines) == 1
        assert message in lines[0]
