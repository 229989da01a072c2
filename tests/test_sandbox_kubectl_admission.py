"""A real `kubectl` meets the API server's admission, on the sandbox as on the real control plane
(`api_server_fixtures`): `kubectl explain` works from the OpenAPI documents, `kubectl apply` (strict
field validation by default) of a typo'd Job fails with the field named, and an invalid built-in
object is refused with the real message."""

from __future__ import annotations

from pathlib import Path

import pytest

from api_server import ApiServer
from kubectl_support import KUBECTL, MISSING, Kubectl

pytest_plugins = ["api_server_fixtures"]
pytestmark = pytest.mark.skipif(KUBECTL is None, reason=MISSING)

TYPO_JOB = {
    "apiVersion": "streams.ibm.com/v1",
    "kind": "Job",
    "metadata": {"name": "typo"},
    "spec": {"bundle": {"name": "apps.parallel.Parallel.sab"}, "fusoin": {"manual": 3}},
}


@pytest.fixture
def kubectl(api_server: ApiServer, tmp_path: Path) -> Kubectl:
    return Kubectl(api_server.kubeconfig, tmp_path)


async def test_explain_a_project_crd_field_and_a_built_in_field(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl.run("explain", "stj.spec.fusion")
    assert "GROUP:      streams.ibm.com" in out
    assert "KIND:       Job" in out
    assert "FIELD: fusion <Object>" in out
    assert "manual" in out
    _, out, _ = await kubectl.run("explain", "pod.spec.containers.ports")
    assert "KIND:       Pod" in out
    assert "containerPort\t<integer> -required-" in out
    assert "IANA_SVC_NAME" in out


async def test_strict_apply_of_a_typo_is_refused_with_the_field_named(kubectl: Kubectl) -> None:
    manifest = kubectl.manifest("job.yaml", TYPO_JOB)
    rc, _, err = await kubectl.run("apply", "-f", manifest, ok=False)
    assert rc == 1
    assert err.strip() == (
        f'Error from server (BadRequest): error when creating "{manifest}": Job in version "v1" cannot be '
        'handled as a Job: strict decoding error: unknown field "spec.fusoin"'
    )
    rc, _, _ = await kubectl.run("get", "stj", "typo", ok=False)
    assert rc == 1  # nothing was created
    _, out, err = await kubectl.run("apply", "--validate=warn", "-f", manifest)
    assert "job.streams.ibm.com/typo created" in out
    assert 'Warning: unknown field "spec.fusoin"' in err


async def test_apply_of_an_invalid_container_port_name_gets_the_real_message(kubectl: Kubectl) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pe-1"},
        "spec": {
            "containers": [
                {
                    "name": "pe",
                    "image": "busybox:1",
                    "ports": [{"containerPort": 10000, "name": "sys-notifications"}],
                }
            ]
        },
    }
    rc, _, err = await kubectl.run("apply", "-f", kubectl.manifest("pod.yaml", pod), ok=False)
    assert rc == 1
    assert err.strip() == (
        'The Pod "pe-1" is invalid: spec.containers[0].ports[0].name: Invalid value: "sys-notifications": '
        "must be no more than 15 characters"
    )
