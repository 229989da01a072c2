"""How the CLI reaches the operator's REST API to upload a bundle, as the user who runs it.

By default through the API server's service proxy,
``<server>/api/v1/namespaces/<operator namespace>/services/streams-api:api/proxy/<path>``: whoever
has kubectl access and may use ``services/proxy`` in the operator's namespace reaches it, with no
port-forward, Ingress or LoadBalancer. The API server removes the ``Authorization`` header of a
request it authenticated before it proxies it, so the user's bearer token travels as
``X-Streams-Authorization``; the operator reviews it (TokenReview) and asks whether its user may
create Jobs in the namespace (SubjectAccessReview). A kubeconfig user with no bearer token (a client
certificate) cannot be named to the operator this way: the error says so.

While the operator has no ready endpoint (it is starting, or its leadership is moving to a standby)
the API server's proxy answers 503 itself and the upload never reached the operator: it is sent
again for a while (`PROXY_WAITS`) before the CLI gives up. An upload is named by its content's
digest, so sending it twice keeps one.

``--operator-service`` names another Service (and port) of the operator's namespace that reaches
its REST API. ``--operator-url`` (or ``$STREAMS_K8S_OPERATOR_URL``) calls the API directly instead, e.g. after
``kubectl port-forward -n <ns> svc/streams-api 10000``; the token is then sent as ``Authorization``.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.config import ConfigException

from streams_k8s.cli.streamtool.session import Cluster, StreamtoolError
from streams_k8s.controller.bundles.uploads import MAX_UPLOAD_BYTES
from streams_k8s.k8s.client import load_configuration
from streams_k8s.k8s.write_guard import FORWARDED_AUTHORIZATION

SERVICE = "streams-api:api"  # deploy/service.yaml: the Service and its port's name


@dataclass(frozen=True, slots=True)
class OperatorAddress:
    """Where the operator's REST API is: a Service of its namespace, through the API server's
    proxy (``service`` is ``name:port``), or ``url`` called directly."""

    namespace: str
    service: str = SERVICE
    url: str | None = None


_TIMEOUT = aiohttp.ClientTimeout(total=600, connect=15)
# Seconds between attempts while the API server's proxy finds no operator to pass the upload to: a
# leader's hand-over and a pod's readiness take seconds (31 s in all before the CLI gives up).
PROXY_WAITS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


class NotPassed(StreamtoolError):
    """kube-apiserver's proxy answered 503 itself: no operator endpoint was ready to take it."""


@dataclass(frozen=True, slots=True)
class Uploaded:
    name: str
    sha256: str
    size: int
    uploaded_by: str


def bundle_digest(path: Path) -> tuple[bytes, str]:
    """The bundle's bytes and sha256; a `StreamtoolError` when it cannot be sent."""
    try:
        size = path.stat().st_size
        if size > MAX_UPLOAD_BYTES:
            raise StreamtoolError(f"{path} has {size} bytes: an upload is at most {MAX_UPLOAD_BYTES}")
        data = path.read_bytes()
    except OSError as err:
        raise StreamtoolError(f"cannot read {path}: {err.strerror or err}") from None
    return data, hashlib.sha256(data).hexdigest()


async def upload(
    cluster: Cluster, operator: OperatorAddress, name: str, data: bytes, digest: str
) -> Uploaded:
    """Send the bundle to the operator for ``cluster.namespace``; what it kept."""
    try:
        configuration = await load_configuration(cluster.kubeconfig, cluster.context)
    except (ConfigException, OSError) as err:
        raise StreamtoolError(f"cannot load the kubeconfig: {err}") from None
    path = f"/api/bundles/{quote(cluster.namespace)}/{quote(name)}?sha256={digest}"
    async with ApiClient(configuration) as api:
        headers: dict[str, str] = {}
        await api.update_params_for_auth(headers, [], ["BearerToken"])
        token = headers.get("authorization") or headers.get("Authorization")
        if not token:
            raise StreamtoolError(
                "the kubeconfig's user has no bearer token, which the operator needs to know who uploads "
                "(a client certificate does not pass the API server's proxy): use a token or exec "
                "credential user, or a Job manifest whose bundle is served over HTTP"
            )
        if operator.url:
            url, sent = operator.url.rstrip("/") + path, {"Authorization": token}
        else:
            service = f"/api/v1/namespaces/{quote(operator.namespace)}/services/{quote(operator.service)}"
            proxy = f"{service}/proxy"
            url = str(configuration.host).rstrip("/") + proxy + path
            sent = {"Authorization": token, FORWARDED_AUTHORIZATION: token}
        sent["Content-Type"] = "application/octet-stream"
        connector = api.rest_client.pool_manager.connector if not operator.url else None
        async with aiohttp.ClientSession(connector=connector, connector_owner=connector is None) as session:
            answer = await _put_until_passed(session, url, data, sent)
    return Uploaded(
        str(answer["name"]), str(answer["sha256"]), int(answer["size"]), str(answer["uploadedBy"])
    )


async def _put_until_passed(
    session: aiohttp.ClientSession, url: str, data: bytes, headers: dict[str, str]
) -> Any:
    for wait in PROXY_WAITS:
        try:
            return await _put(session, url, data, headers)
        except NotPassed:
            await asyncio.sleep(wait)
    try:
        return await _put(session, url, data, headers)
    except NotPassed as err:
        raise StreamtoolError(f"{err} (still, {sum(PROXY_WAITS):g} s later)") from None


async def _put(session: aiohttp.ClientSession, url: str, data: bytes, headers: dict[str, str]) -> Any:
    try:
        async with session.put(url, data=data, headers=headers, timeout=_TIMEOUT) as response:
            body = await response.read()
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as err:
        raise StreamtoolError(f"cannot reach the operator at {url.split('?')[0]}: {err}") from None
    try:
        answer = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        answer = {"message": body[:200].decode(errors="replace").strip()}
    if status != 201:
        found = answer if isinstance(answer, dict) else {}
        message = found.get("message") or "no reason given"
        if found.get("kind") == "Status":  # kube-apiserver's own answer (its proxy's)
            refusal = NotPassed if status == 503 else StreamtoolError
            raise refusal(f"the API server did not pass the upload to the operator ({status}): {message}")
        if {"status", "reason", "message"} <= found.keys():  # every answer of the operator's
            raise StreamtoolError(f"the operator refused the upload ({status}): {message}")
        raise StreamtoolError(f"the upload was answered {status}, not by the operator: {message}")
    return answer
