"""A TLSv1.2 job's transport certificate and private key: in a Secret owned by the Job, projected with
the job's ConfigMap into the directory the runtime reads, never in a ConfigMap; the operator does it
with the RBAC deploy/ grants (Secrets by name only). A job an earlier release left with the pair in
its ConfigMap is moved on upgrade: the Secret is made with the same pair, the ConfigMap loses it,
and its running PEs keep their pods."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from job_inventory import pe_pods
from k8s_support import eventually_async
from operator_support import SUBMITTED, job_manifest, operator, wait_for_phase
from streams_k8s.api.contract import JOB_CONFIG_DIR, TRANSPORT_CERT_KEY, TRANSPORT_KEY_KEY
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.children.transport_secret import secret_transport
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SECRETS
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.kubeconfig import write_kubeconfig
from test_deploy_rbac_sandbox import OPERATOR, USER, install_operator_rbac, refused_requests
from tokens import token_for

TLS = {"processingElement": {"transportSecurityType": "TLSv1.2"}}


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def no_private_key_in_any_config_map(client: KubeClient) -> None:
    config_maps, _ = await client.list_all(CONFIGMAPS, "default")
    assert config_maps
    for config_map in config_maps:
        for key, value in (config_map.get("data") or {}).items():
            assert "PRIVATE KEY" not in value, (config_map["metadata"]["name"], key)


def assert_a_matching_pair(transport: tuple[str, str] | None) -> None:
    assert transport is not None
    cert, key = transport
    public = x509.load_pem_x509_certificate(cert.encode()).public_key()
    private = serialization.load_pem_private_key(key.encode(), password=None)
    pem = serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    assert public.public_bytes(*pem) == private.public_key().public_bytes(*pem)


def job_config_volume(pod: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod["spec"]["containers"]
    (mount,) = (m for m in container["volumeMounts"] if m["mountPath"] == JOB_CONFIG_DIR)
    (volume,) = (v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
    return dict(volume)


@pytest.mark.sandbox(nodes=2)
async def test_the_transport_key_is_in_a_secret_of_the_job_projected_where_the_runtime_reads(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await install_operator_rbac(client)
    token = await token_for(client, OPERATOR)
    kubeconfig = write_kubeconfig(tmp_path / "operator", sandbox.url, token)
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache", kubeconfig=str(kubeconfig)):
        await client.create(JOBS, job_manifest("tls", bundle, fusion={"manual": 2}, **TLS))
        await wait_for_phase(client, "tls", "Running")
        job = await client.get(JOBS, "tls", "default")
        secret = await client.get(SECRETS, "tls-transport", "default")
        pods, _ = await client.list_all(PODS, "default", label_selector="streams.ibm.com/job=tls,svc=pe")
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["uid"], owner["controller"]) == (job["metadata"]["uid"], True)
    assert set(secret["data"]) == {TRANSPORT_CERT_KEY, TRANSPORT_KEY_KEY}
    assert_a_matching_pair(secret_transport(secret))
    await no_private_key_in_any_config_map(client)
    assert len(pods) == 2
    for pod in pods:
        sources = job_config_volume(pod)["projected"]["sources"]
        assert sources == [{"configMap": {"name": "tls"}}, {"secret": {"name": "tls-transport"}}]
    made = [r for r in sandbox.requests if r.user == USER and r.info is not None]
    assert refused_requests(sandbox, made, token) == []


@pytest.mark.sandbox(nodes=2)
async def test_an_upgraded_operator_moves_a_running_jobs_key_out_of_its_config_map(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=2))
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest("older", bundle, fusion={"manual": 2}, **TLS))
        await wait_for_phase(client, "older", "Running")
        transport = secret_transport(await client.get(SECRETS, "older-transport", "default"))
    assert transport is not None
    # As a release before this one left the job: the pair in the name table, no Secret.
    cert, key = transport
    pair = {"data": {TRANSPORT_CERT_KEY: cert, TRANSPORT_KEY_KEY: key}}
    await client.patch(CONFIGMAPS, "older", pair, "default")
    await client.delete(SECRETS, "older-transport", "default")
    pods = await pe_pods(client, "older")
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):

        async def moved() -> bool:
            table = await client.get(CONFIGMAPS, "older", "default")
            return TRANSPORT_KEY_KEY not in (table.get("data") or {})

        await eventually_async(moved, within=30)
        secret = await client.get(SECRETS, "older-transport", "default")
        await wait_for_phase(client, "older", *SUBMITTED)
        assert await pe_pods(client, "older") == pods  # the running PEs keep their pods
    assert secret_transport(secret) == transport  # the same pair: old and new PEs trust each other
    table = await client.get(CONFIGMAPS, "older", "default")
    assert TRANSPORT_CERT_KEY not in table["data"]
    await no_private_key_in_any_config_map(client)
