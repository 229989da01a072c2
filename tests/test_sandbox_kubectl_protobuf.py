"""The kubectl verbs that send protobuf (client-go's typed clients, since 1.32) work against the
sandbox as on a real server: each `create` generator stores the same object as its own
`--dry-run=client -o json` piped to `kubectl create -f -`, and the body kubectl sent decodes to that
JSON; `create token`, `auth can-i`, `auth reconcile` and `drain --disable-eviction` do their job.
(`run`, `expose` and `drain`'s evictions send JSON: test_sandbox_kubectl.py has them.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio

from kubectl_support import KUBECTL, MISSING, Kubectl
from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.admission import protobuf
from streams_k8s.sandbox.server import RequestRecord

pytestmark = pytest.mark.skipif(KUBECTL is None, reason=MISSING)

PROTOBUF = "application/vnd.kubernetes.protobuf"
RBAC = "rbac.authorization.k8s.io"

# kubectl create ARGS, and the (group, resource) and name of the object it makes
GENERATORS = [
    ("namespace team-a", ("", "namespaces"), "team-a"),
    ("configmap app --from-literal=a=1 --from-literal=b=two", ("", "configmaps"), "app"),
    ("secret generic creds --from-literal=user=u --type=example.com/x", ("", "secrets"), "creds"),
    ("serviceaccount builder", ("", "serviceaccounts"), "builder"),
    ("deployment web --image=nginx:1 --replicas=2 --port=80", ("apps", "deployments"), "web"),
    ("service clusterip front --tcp=80:8080 --tcp=443:web", ("", "services"), "front"),
    ("role reader --verb=get,list --resource=pods,configmaps", (RBAC, "roles"), "reader"),
    (
        "rolebinding reads --role=reader --user=bob --serviceaccount=default:builder",
        (RBAC, "rolebindings"),
        "reads",
    ),
    (
        "clusterrole nodes --verb=get --resource=nodes --non-resource-url=/healthz",
        (RBAC, "clusterroles"),
        "nodes",
    ),
    ("clusterrole viewer --aggregation-rule=example.com/view=true", (RBAC, "clusterroles"), "viewer"),
    ("clusterrolebinding views --clusterrole=viewer --group=team", (RBAC, "clusterrolebindings"), "views"),
]


@dataclass(frozen=True)
class Side:
    sandbox: Sandbox
    kubectl: Kubectl


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sides(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Side, Side]]:
    """Two sandboxes: kubectl sends protobuf to the first, JSON to the second."""
    async with Sandbox(simulate=False) as protobuf_side, Sandbox(simulate=False) as json_side:
        yield (
            Side(protobuf_side, Kubectl(protobuf_side.kubeconfig_path, tmp_path_factory.mktemp("protobuf"))),
            Side(json_side, Kubectl(json_side.kubeconfig_path, tmp_path_factory.mktemp("json"))),
        )


def last_write(sandbox: Sandbox, method: str = "POST") -> RequestRecord:
    return [r for r in sandbox.requests if r.method == method][-1]


def without_null_creation_timestamps(value: Any) -> Any:
    """kubectl 1.33 marshals a zero metadata.creationTimestamp as null; apimachinery 0.37, whose
    types the sandbox reads protobuf with, marks it omitzero."""
    if isinstance(value, dict):
        return {
            k: without_null_creation_timestamps(v)
            for k, v in value.items()
            if not (k == "creationTimestamp" and v is None)
        }
    if isinstance(value, list):
        return [without_null_creation_timestamps(v) for v in value]
    return value


def stored(sandbox: Sandbox, key: tuple[str, str], name: str) -> dict[str, Any]:
    """The object as stored, less what the server assigns on its own (identity, version, time, a
    Service's cluster IP)."""
    rt = sandbox.registry.types[key]
    obj: dict[str, Any] = orjson.loads(
        orjson.dumps(sandbox.registry.get(rt, "default" if rt.namespaced else None, name))
    )
    for assigned in ("uid", "resourceVersion", "creationTimestamp"):
        del obj["metadata"][assigned]
    for assigned in ("clusterIP", "clusterIPs"):
        obj.get("spec", {}).pop(assigned, None)
    return obj


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    ("command", "key", "name"), GENERATORS, ids=[g[0].split(" --")[0] for g in GENERATORS]
)
async def test_a_generator_stores_what_its_json_stores(
    sides: tuple[Side, Side], command: str, key: tuple[str, str], name: str
) -> None:
    (pb_sandbox, over_protobuf), (json_sandbox, over_json) = ((side.sandbox, side.kubectl) for side in sides)
    args = command.split()
    _, client_json, _ = await over_protobuf.run("create", *args, "--dry-run=client", "-o", "json")
    expected = orjson.loads(client_json)

    # the body kubectl sends decodes to the JSON kubectl itself makes of the object
    await over_protobuf.run("create", *args, "--dry-run=server", "-o", "name")
    sent = last_write(pb_sandbox)
    assert sent.content_type == PROTOBUF
    envelope = protobuf.read_envelope(sent.body)
    message = protobuf.message_of(envelope.api_version, envelope.kind)
    assert message is not None
    assert protobuf.decode_object(envelope, message) == without_null_creation_timestamps(expected)

    await over_protobuf.run("create", *args)
    protobuf_write = last_write(pb_sandbox)
    assert (protobuf_write.content_type, protobuf_write.status) == (PROTOBUF, 201)
    await over_json.run("create", "-f", "-", stdin=client_json)
    json_write = last_write(json_sandbox)
    assert (json_write.content_type, json_write.status) == ("application/json", 201)
    assert stored(pb_sandbox, key, name) == stored(json_sandbox, key, name)


@pytest.mark.asyncio(loop_scope="module")
async def test_create_token_issues_a_token_of_the_service_account(sides: tuple[Side, Side]) -> None:
    sandbox, kubectl = sides[0].sandbox, sides[0].kubectl
    await kubectl.run("create", "serviceaccount", "robot")
    _, token, _ = await kubectl.run("create", "token", "robot", "--audience=streams", "--duration=20m")
    assert last_write(sandbox).content_type == PROTOBUF
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token.strip(), "audiences": ["streams"]},
    }
    _, out, _ = await kubectl.run("create", "-f", "-", "-o", "json", stdin=orjson.dumps(review).decode())
    status = orjson.loads(out)["status"]
    assert status["authenticated"] is True
    assert status["user"]["username"] == "system:serviceaccount:default:robot"
    assert status["audiences"] == ["streams"]
    _, default_token, _ = await kubectl.run("create", "token", "robot")  # no duration: null, the default
    assert default_token.strip()


# kubectl sends a bearer token over HTTPS only, and asks for a user where the kubeconfig names none
@pytest.mark.sandbox(simulate=False, tls=True, token="sandbox-admin")
async def test_auth_can_i_and_reconcile_answer_from_the_rbac_objects(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    kubectl = Kubectl(sandbox.kubeconfig_path, tmp_path)
    await kubectl.run("create", "serviceaccount", "auditor")
    _, token, _ = await kubectl.run("create", "token", "auditor")
    as_auditor = ("--token", token.strip(), "auth", "can-i", "list", "secrets")
    rc, out, _ = await kubectl.run(*as_auditor, ok=False)
    assert (rc, out.strip()) == (1, "no")
    assert last_write(sandbox).content_type == PROTOBUF  # the SelfSubjectAccessReview
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": "secret-lister", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}],
    }
    _, out, _ = await kubectl.run("auth", "reconcile", "-f", kubectl.manifest("role.yaml", role))
    assert "role.rbac.authorization.k8s.io/secret-lister reconciled" in out
    assert last_write(sandbox).content_type == PROTOBUF
    await kubectl.run(
        "create", "rolebinding", "lists", "--role=secret-lister", "--serviceaccount=default:auditor"
    )
    _, out, _ = await kubectl.run(*as_auditor)
    assert out.strip() == "yes"


async def test_drain_without_evictions_deletes_with_protobuf_delete_options(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    kubectl = Kubectl(sandbox.kubeconfig_path, tmp_path)
    pod = {"spec": {"nodeName": "node-1"}}
    await kubectl.run("run", "worker", "--image=busybox:1", f"--overrides={orjson.dumps(pod).decode()}")
    await kubectl.run("drain", "node-1", "--disable-eviction", "--force", "--grace-period=0", "--timeout=30s")
    deletion = next(r for r in sandbox.requests if r.method == "DELETE" and r.path.endswith("/pods/worker"))
    assert (deletion.content_type, deletion.status) == (PROTOBUF, 200)
    assert sandbox.registry.find(sandbox.registry.types[("", "pods")], "default", "worker") is None
