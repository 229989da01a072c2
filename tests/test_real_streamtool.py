"""`kubectl streams` on the real control plane, as the README's section walks it: a user with a token
and a Role submits a local bundle in one command (reviewed by the real TokenReview and
SubjectAccessReview), lists it, resizes its region, cancels it; a user who may not create Jobs
cannot upload.

The upload takes its default route, kube-apiserver's service proxy to `streams-api`: kube-apiserver
reaches the operator pod's address through the simulation's cluster egress proxy
(`sandbox.cluster.egress_proxy`), as a control plane reaches pods through Konnectivity, and the
operator reviews the token the CLI repeats as `X-Streams-Authorization`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
import pytest_asyncio

from kubectl_streams import USER_ROLE, kubectl_streams, plugin_directory, user
from real_cluster import NAMESPACE, RealCluster, deployed, eventually
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.control_plane.cluster import ControlPlane
from streams_k8s.controller.bundles.uploads import CHUNK_BYTES, UploadedBundles
from streams_k8s.controller.kinds import JOBS, PARALLEL_REGIONS
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import SERVICES

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster(
    installed: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RealCluster]:
    async for running in deployed(installed, tmp_path_factory.mktemp("real-streamtool")):
        yield running


async def in_streams(kubeconfig: Path, plugins: Path, *args: str) -> tuple[int, str, str]:
    return await kubectl_streams(kubeconfig, plugins, *args, "-n", NAMESPACE)


async def test_a_user_submits_a_local_bundle_with_kubectl_streams_and_walks_the_verbs(
    cluster: RealCluster, tmp_path: Path
) -> None:
    await cluster.kubectl("apply", "-f", "-", stdin=USER_ROLE)
    alice = await user(cluster, "alice", "streams-user", NAMESPACE, tmp_path)
    bob = await user(cluster, "bob", "streams-viewer", NAMESPACE, tmp_path)
    plugins = plugin_directory(tmp_path / "plugins")
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, regions=1, width_values=True))
    digest = hashlib.sha256(sab.read_bytes()).hexdigest()
    await cluster.operator_proxied()

    code, out, err = await in_streams(bob, plugins, "submitjob", str(sab))
    assert (code, out) == (1, "")
    assert "may not create streamsjobs.streams.ibm.com in namespace streams" in err, err
    with pytest.raises(ApiError):
        await cluster.client.get(JOBS, "app", NAMESPACE)

    code, out, err = await in_streams(alice, plugins, "submitjob", str(sab), "-P", "width0=2")
    assert code == 0, err
    assert out == "streamsjob.streams.ibm.com/app created\n"
    job = await cluster.client.get(JOBS, "app", NAMESPACE)
    assert job["spec"]["bundle"]["upload"] == {"sha256": digest}
    await cluster.wait_ready("app")

    code, out, err = await in_streams(alice, plugins, "lsjobs", "-o", "json")
    assert code == 0, err
    (row,) = [j for j in orjson.loads(out)["jobs"] if j["name"] == "app"]
    assert (row["phase"], row["bundle"]) == ("Running", "app.sab")

    (region,) = (
        await cluster.client.list_all(PARALLEL_REGIONS, NAMESPACE, label_selector="streams.ibm.com/job=app")
    )[0]
    alias = region["spec"]["alias"]
    code, _, err = await in_streams(
        alice, plugins, "updateoperators", "app", "--parallelRegionWidth", f"{alias}=3"
    )
    assert code == 0, err

    async def resized() -> bool:
        found = await cluster.client.get(PARALLEL_REGIONS, region["metadata"]["name"], NAMESPACE)
        return bool((found.get("status") or {}).get("width") == 3)

    await eventually(resized, 90, "the region running at width 3")

    # The simulated nodes serve no kubelet API: a log cannot be read, so the job is left running.
    logs = tmp_path / "logs"
    code, out, err = await in_streams(alice, plugins, "canceljob", "app", "--collectlogs", str(logs))
    assert (code, out) == (1, "")
    assert err.startswith("error: reading the log of pod streams/app-"), err
    assert "job app left running; --force cancels it" in err
    await cluster.client.get(JOBS, "app", NAMESPACE)
    code, out, err = await in_streams(
        alice, plugins, "canceljob", "app", "--collectlogs", str(logs), "--force"
    )
    assert code == 0, err
    assert out == "streamsjob.streams.ibm.com/app deleted\n"


async def test_an_upload_waits_out_the_proxys_503_until_the_operator_is_served(
    cluster: RealCluster, tmp_path: Path
) -> None:
    """While `streams-api` has no ready endpoint (a leader's hand-over: no pod carries the serving
    label), kube-apiserver's proxy answers 503 itself; the CLI sends the upload again until the
    operator takes it."""
    await cluster.kubectl("apply", "-f", "-", stdin=USER_ROLE)
    carol = await user(cluster, "carol", "streams-user", NAMESPACE, tmp_path)
    plugins = plugin_directory(tmp_path / "plugins")
    sab = write_sab(tmp_path / "handover.sab", SyntheticSpec(chains=1, length=2))
    await cluster.operator_proxied()
    service = await cluster.client.get(SERVICES, "streams-api", NAMESPACE)
    selector = service["spec"]["selector"]
    nobody = {"spec": {"selector": {**selector, "streams.ibm.com/serving": "nobody"}}}
    await cluster.client.patch(SERVICES, "streams-api", nobody, NAMESPACE)
    try:

        async def refused() -> bool:  # what the CLI meets first
            path = f"/api/v1/namespaces/{NAMESPACE}/services/streams-api:api/proxy/healthz"
            try:
                await cluster.kubectl("get", "--raw", path)
            except AssertionError as failed:  # kubectl's exit status
                return "no endpoints available" in str(failed)
            return False

        await eventually(refused, 60, "the proxy answering 503 for streams-api")
        submitted = asyncio.create_task(in_streams(carol, plugins, "submitjob", str(sab)))
        await asyncio.sleep(2)
        assert not submitted.done()
    finally:
        await cluster.client.patch(SERVICES, "streams-api", {"spec": {"selector": selector}}, NAMESPACE)
    code, out, err = await submitted
    assert code == 0, err
    assert out == "streamsjob.streams.ibm.com/handover created\n"
    code, _, err = await in_streams(carol, plugins, "canceljob", "handover")
    assert code == 0, err


async def test_the_real_api_server_keeps_an_upload_of_several_full_chunks(cluster: RealCluster) -> None:
    """A chunk is as large as a ConfigMap may hold with its metadata: kube-apiserver accepts it."""
    uploads = UploadedBundles(cluster.client)
    data = os.urandom(2 * CHUNK_BYTES + 1)
    digest = await uploads.save(NAMESPACE, "big.sab", data, "admin")
    assert await uploads.restore(NAMESPACE, digest) == data
