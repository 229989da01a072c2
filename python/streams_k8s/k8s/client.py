"""A Kubernetes client for any resource over kubernetes_asyncio's transport, decoded with orjson.

kubernetes_asyncio provides the configuration (kubeconfig, in-cluster service account, exec
plugins), TLS and the aiohttp session; this module sends raw JSON and decodes answers with orjson
into dicts, never into the generated model classes. Every request passes a client-side QPS bucket
and a concurrency limit; 429 and 5xx answers are retried after ``Retry-After``; a 401 reloads the
credentials in place, so open watches keep their connections.

Long: one class, the client, whose methods are the REST verbs, their retries and pagination.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, Protocol, TypeVar

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import load_incluster_config, load_kube_config
from pydantic import BaseModel
from yarl import URL

from streams_k8s.k8s.api_errors import ApiErrorRate
from streams_k8s.k8s.backoff import TokenBucket
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.objects import Object, meta

log = logging.getLogger(__name__)

JSON: Final = "application/json"
PatchType = Literal["merge", "json", "strategic"]
_PATCH_CONTENT_TYPES: Final[dict[str, str]] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
_APPLY_CONTENT_TYPE: Final = "application/apply-patch+yaml"  # JSON is valid YAML
_MAX_RETRY_AFTER: Final = 60.0
M = TypeVar("M", bound=BaseModel)


class Kind(Protocol):
    """A model class that names its REST resource (as every kind of `streams_k8s.api` does)."""

    group: ClassVar[str]
    version: ClassVar[str]
    plural: ClassVar[str]
    kind_name: ClassVar[str]


@dataclass(frozen=True)
class Resource:
    """One REST resource: built-in (group "") or custom, namespaced or cluster-scoped.

    Compared and hashed by a key built once: resources key every cache and every child of a plan,
    and the generated methods built their tuples on every call (tens of thousands of calls in one
    pass over a 1,000-PE job)."""

    group: str
    version: str
    plural: str
    kind: str = ""
    namespaced: bool = True
    _key: tuple[str, str, str, str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_key", (self.group, self.version, self.plural, self.kind, self.namespaced))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return isinstance(other, Resource) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    @classmethod
    def of(cls, kind: type[Kind]) -> Resource:
        """The (namespaced) resource of a model class, from what the model says of itself."""
        return cls(kind.group, kind.version, kind.plural, kind.kind_name)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


async def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Configuration:
    """Credentials from a kubeconfig (explicit, $KUBECONFIG, ~/.kube/config) or the pod's service account."""
    configuration = Configuration()
    path = kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0] or None
    default = Path.home() / ".kube" / "config"
    if path is None and "KUBERNETES_SERVICE_HOST" not in os.environ and default.is_file():
        path = str(default)
    if path is not None:
        await load_kube_config(
            config_file=path, context=context, client_configuration=configuration, persist_config=False
        )
    else:
        # Re-reads the projected token file once a minute, so rotated tokens are picked up.
        load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return configuration


def _environment_proxy(host: str) -> dict[str, Any]:
    """The proxy the environment names for ``host`` (HTTPS_PROXY, NO_PROXY, ...), as request options."""
    try:
        proxy, auth = aiohttp.helpers.get_env_proxy_for_url(URL(host))
    except LookupError:
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


def _query(params: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return min(_MAX_RETRY_AFTER, max(0.0, float(value)))
    except ValueError:
        return None  # an HTTP date; rare from the API server, fall back to our own backoff


def _decode_error(status: int, data: bytes, headers: Mapping[str, str]) -> ApiError:
    """An ApiError from a Status body, or from whatever text a proxy or load balancer sent."""
    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        body = {"message": data[:200].decode("utf-8", "replace").strip()}
    return ApiError.from_status(status, body, _retry_after(headers))


class KubeClient:
    """Requests against one API server, shared by every informer and controller of a process."""

    def __init__(
        self,
        configuration: Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        max_concurrency: int = 32,
        max_retries: int = 4,
        request_timeout: float = 30.0,
        reload: Callable[[], Awaitable[Configuration]] | None = None,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        # Watches hold connections for minutes; our own semaphore bounds the other requests.
        configuration.connection_pool_maxsize = 0
        self._api = ApiClient(configuration)
        self._host = str(configuration.host).rstrip("/")
        # kubernetes_asyncio's session trusts the environment on every request: a ~/.netrc and a
        # proxy lookup, each in a worker thread (a quarter of the operator's CPU in a 6,000-PE
        # submission). Ours shares its connector (TLS settings) and reads the proxy variables once.
        self._session = aiohttp.ClientSession(
            connector=self._api.rest_client.pool_manager.connector, connector_owner=False, read_bufsize=2**21
        )
        self._proxy = _environment_proxy(self._host)
        self._bucket = TokenBucket(qps, burst)
        self._slots = asyncio.Semaphore(max_concurrency)
        self.max_retries = max_retries
        self.defer_throttled = False  # `deferring_throttled`
        self.request_timeout = request_timeout
        self._reload = reload
        self._reload_lock = asyncio.Lock()
        self._reloaded_at = float("-inf")
        self.metrics = metrics if metrics is not None else RuntimeMetrics()
        self.errors = ApiErrorRate()  # what readiness reads (`api_errors`)
        self.metrics.api_error_ratio.set_function(self.errors.ratio)

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, **options: Any
    ) -> KubeClient:
        async def reload() -> Configuration:
            return await load_configuration(kubeconfig, context)

        return cls(await reload(), reload=reload, **options)

    def with_rate_limit(self, qps: float, burst: int) -> KubeClient:
        """This client (connections, credentials, metrics, concurrency limit) with a token bucket of
        its own, for requests that must not spend the controllers' budget (and never closed: the
        session is this client's)."""
        other = copy.copy(self)
        other._bucket = TokenBucket(qps, burst)
        return other

    def with_own_lane(self, qps: float, burst: int, concurrency: int) -> KubeClient:
        """This client (connections, credentials, metrics) with a token bucket and a bound on
        requests in flight of its own: for the few requests that must go out while the
        controllers' queue for theirs, as leader election's renewals (a sick API server's retries
        fill the shared slots and bucket)."""
        other = self.with_rate_limit(qps, burst)
        other._slots = asyncio.Semaphore(concurrency)
        return other

    def with_retries(self, max_retries: int) -> KubeClient:
        """This client (everything shared, the session too: never closed) retrying each request at
        most ``max_retries`` times: for callers that retry later on their own rather than wait
        out a Retry-After inline (the Event delivery queue)."""
        other = copy.copy(self)
        other.max_retries = max_retries
        return other

    def deferring_throttled(self) -> KubeClient:
        """This client (everything shared) answering a 429 with its Retry-After at once instead of
        sleeping it out: for a controller's reconciles, whose key then comes back after that wait
        (`controller.Controller`) while the worker reconciles other keys."""
        other = copy.copy(self)
        other.defer_throttled = True
        return other

    async def close(self) -> None:
        await self._session.close()
        await self._api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def reload_credentials(self) -> None:
        """Re-read credentials into the live configuration; open connections are left alone."""
        if self._reload is None:
            return
        async with self._reload_lock:
            if time.monotonic() - self._reloaded_at < 1.0:
                return  # a concurrent 401 already reloaded them
            fresh = await self._reload()
            live = self._api.configuration
            live.api_key = dict(fresh.api_key)
            live.api_key_prefix = dict(fresh.api_key_prefix)
            live.refresh_api_key_hook = fresh.refresh_api_key_hook
            self._reloaded_at = time.monotonic()
            log.info("reloaded Kubernetes credentials after a 401")

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON}
        if content_type:
            headers["Content-Type"] = content_type
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    @asynccontextmanager
    async def _slots_after_rate_limit(self) -> AsyncIterator[None]:
        """A token of the rate limit, then one of the client's slots for the send."""
        await self._bucket.acquire()
        async with self._slots:
            yield

    def _may_retry(self, method: str, error: ApiError, idempotent: bool) -> bool:
        if error.status == 429 or error.retry_after is not None:
            return True  # the server asked us to come back; it did not act on the request
        if idempotent:  # a create by a name of its own: again after a 5xx, a lost answer, a conflict
            return error.retryable or (error.conflict and not error.already_exists)
        # POST is not idempotent: after a 5xx or a lost answer the caller decides (409 tells it).
        return method != "POST" and error.retryable

    def _retry_delay(self, error: ApiError, attempt: int) -> float:
        if error.retry_after is not None:
            return float(error.retry_after)
        return min(10.0, 0.2 * 2.0**attempt) * (0.5 + random.random() / 2)

    async def request(
        self,
        method: str,
        resource: Resource,
        path: str,
        *,
        verb: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        before_send: Callable[[], None] | None = None,
        idempotent: bool = False,
        slot: asyncio.Semaphore | None = None,
    ) -> Object:
        """Send one request (with retries) and return the decoded answer; ``idempotent``: a POST
        that may be sent again (`create_if_absent`: the name is the object's own, a second create
        answers AlreadyExists) is retried as the other methods are. ``before_send`` runs right
        before each attempt goes out, once the rate limit and a slot let it (a create that waited
        there behind others can still be called off: `controller.stop_if_owner_deleted`); what it
        raises ends the request unsent. ``slot``: the caller's bound on its requests in flight,
        held for each attempt only: a request waiting out a Retry-After or a backoff lets the
        caller's other requests go meanwhile."""
        payload = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        params = _query(query or {})
        label = str(resource)
        attempt, reloaded = 0, False
        while True:
            async with slot or contextlib.nullcontext(), self._slots_after_rate_limit():
                if before_send is not None:
                    before_send()
                started = time.monotonic()
                status, data, headers = 0, b"", {}
                try:
                    async with self._session.request(
                        method,
                        self._host + path,
                        params=params,
                        data=payload,
                        headers=await self._headers(content_type if payload is not None else None),
                        timeout=aiohttp.ClientTimeout(total=self.request_timeout),
                        **self._proxy,
                    ) as response:
                        status, headers = response.status, dict(response.headers)
                        data = await response.read()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    data = str(exc).encode() or type(exc).__name__.encode()
                finally:
                    self.metrics.api_latency.labels(verb, label).observe(time.monotonic() - started)
                    self.metrics.api_requests.labels(verb, label, str(status)).inc()
                    self.errors.record(status)
            if 200 <= status < 300:
                return orjson.loads(data) if data else {}
            error = _decode_error(status, data, headers)
            if status == 401 and not reloaded and self._reload is not None:
                reloaded = True
                await self.reload_credentials()
                continue
            throttled = status == 429 and error.retry_after is not None
            if throttled and self.defer_throttled:
                raise error
            if attempt < self.max_retries and self._may_retry(method, error, idempotent):
                delay = self._retry_delay(error, attempt)
                attempt += 1
                log.debug("%s %s answered %s; retry %d in %.2fs", method, path, status, attempt, delay)
                await asyncio.sleep(delay)
                continue
            raise error

    @asynccontextmanager
    async def stream(
        self, resource: Resource, path: str, query: Mapping[str, Any], connect_timeout: float
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Open a long-lived response (a watch); the caller reads it and enforces idle time. A
        request answered 429 or 5xx is sent again as any read is (its resourceVersion still holds):
        a watch reconnects in a fraction of a second, not after its informer's backoff."""
        params = _query(query)
        reloaded, attempt = False, 0
        while True:
            await self._bucket.acquire()
            started = time.monotonic()
            status = 0
            try:
                response = await self._session.request(
                    "GET",
                    self._host + path,
                    params=params,
                    headers=await self._headers(None),
                    timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout),
                    **self._proxy,
                )
                status = response.status
            finally:
                self.metrics.api_latency.labels("watch", str(resource)).observe(time.monotonic() - started)
                self.metrics.api_requests.labels("watch", str(resource), str(status)).inc()
            if status == 401 and not reloaded and self._reload is not None:
                response.release()
                reloaded = True
                await self.reload_credentials()
                continue
            if 200 <= status < 300:
                break
            try:
                error = _decode_error(status, await response.read(), response.headers)
            finally:
                response.close()
            if attempt < self.max_retries and self._may_retry("GET", error, idempotent=False):
                await asyncio.sleep(self._retry_delay(error, attempt))
                attempt += 1
                continue
            raise error
        try:
            yield response
        finally:
            response.close()

    # --- verbs -----------------------------------------------------------------------------

    @staticmethod
    def _namespace(resource: Resource, namespace: str | None, obj: Object | None = None) -> str | None:
        if not resource.namespaced:
            return None
        namespace = namespace or (meta(obj).get("namespace") if obj is not None else None)
        if not namespace:
            raise ValueError(f"{resource} is namespaced: a namespace is required")
        return str(namespace)

    @staticmethod
    def _name(obj: Object) -> str:
        name = meta(obj).get("name")
        if not name:
            raise ValueError("the object has no metadata.name")
        return str(name)

    async def get(
        self, resource: Resource, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> Object:
        path = resource.path(self._namespace(resource, namespace), name, subresource)
        return await self.request("GET", resource, path, verb="get")

    async def get_model(
        self, model: type[M], resource: Resource, name: str, namespace: str | None = None
    ) -> M:
        """GET decoded by orjson, then validated into ``model`` (a pydantic model of the kind)."""
        return model.model_validate(await self.get(resource, name, namespace))

    async def list_models(
        self,
        model: type[M],
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
    ) -> list[M]:
        items, _ = await self.list_all(resource, namespace, label_selector=label_selector)
        return [model.model_validate(item) for item in items]

    async def list_pages(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> AsyncIterator[Object]:
        """Yield list pages (each a List object) until the server has no more."""
        path = resource.path(namespace if resource.namespaced else None)
        token: str | None = None
        while True:
            page = await self.request(
                "GET",
                resource,
                path,
                verb="list",
                query={
                    "labelSelector": label_selector,
                    "fieldSelector": field_selector,
                    "limit": page_size or None,
                    "continue": token,
                },
            )
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    async def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[list[Object], str]:
        """Every object (all pages) and the list's resourceVersion."""
        items: list[Object] = []
        version = ""
        async for page in self.list_pages(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
        ):
            items.extend(page.get("items") or ())
            version = str((page.get("metadata") or {}).get("resourceVersion") or version)
        return items, version

    async def create(
        self,
        resource: Resource,
        obj: Object,
        namespace: str | None = None,
        field_manager: str | None = None,
        before_send: Callable[[], None] | None = None,
        idempotent: bool = False,
        slot: asyncio.Semaphore | None = None,
    ) -> Object:
        path = resource.path(self._namespace(resource, namespace, obj))
        return await self.request(
            "POST",
            resource,
            path,
            verb="create",
            body=obj,
            query={"fieldManager": field_manager},
            before_send=before_send,
            idempotent=idempotent,
            slot=slot,
        )

    async def create_if_absent(
        self,
        resource: Resource,
        obj: Object,
        namespace: str | None = None,
        before_send: Callable[[], None] | None = None,
        slot: asyncio.Semaphore | None = None,
    ) -> Object | None:
        """Create; None when it exists already (with deterministic names, creating is idempotent:
        a 5xx, a lost answer or a conflict is retried as for any other write)."""
        try:
            return await self.create(
                resource, obj, namespace, before_send=before_send, idempotent=True, slot=slot
            )
        except ApiError as err:
            if err.already_exists:
                return None
            raise

    async def replace(
        self,
        resource: Resource,
        obj: Object,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> Object:
        """PUT the whole object; its metadata.resourceVersion makes it conditional (409 if stale)."""
        path = resource.path(self._namespace(resource, namespace, obj), self._name(obj), subresource)
        return await self.request(
            "PUT", resource, path, verb="update", body=obj, query={"fieldManager": field_manager}
        )

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object | list[Object],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> Object:
        path = resource.path(self._namespace(resource, namespace), name, subresource)
        return await self.request(
            "PATCH",
            resource,
            path,
            verb="patch",
            body=patch,
            content_type=_PATCH_CONTENT_TYPES[patch_type],
            query={"fieldManager": field_manager},
        )

    async def apply(
        self,
        resource: Resource,
        obj: Object,
        *,
        field_manager: str,
        force: bool = True,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        """Server-side apply: the fields in ``obj`` become owned by ``field_manager``."""
        body = {"apiVersion": resource.api_version, **obj}
        if resource.kind:
            body.setdefault("kind", resource.kind)
        path = resource.path(self._namespace(resource, namespace, obj), self._name(obj), subresource)
        return await self.request(
            "PATCH",
            resource,
            path,
            verb="apply",
            body=body,
            content_type=_APPLY_CONTENT_TYPE,
            query={"fieldManager": field_manager, "force": force},
        )

    async def patch_status(
        self, resource: Resource, name: str, status: Object, namespace: str | None = None
    ) -> Object:
        """Merge-patch the status subresource (spec writers can never clobber it, nor it them)."""
        return await self.patch(resource, name, {"status": status}, namespace, subresource="status")

    async def patch_status_if(
        self,
        resource: Resource,
        name: str,
        namespace: str | None,
        status: Object,
        *,
        held: Mapping[str, Any],
        resource_version: str | None,
    ) -> Object:
        """Set the ``status`` fields on the condition that the status still holds ``held``: a JSON
        patch of `test`s, narrower than a resourceVersion, which every other writer of the status
        moves (a failed test is a bare 422 Invalid, as a refused value is). With nothing ``held``,
        on ``resource_version`` (409). A null unsets a field (the API server prunes a null that
        its schema does not allow; a merge patch's null removes)."""
        if not held:
            body = {"metadata": {"resourceVersion": resource_version}, "status": status}
            return await self.patch(resource, name, body, namespace, subresource="status")
        ops = [{"op": "test", "path": f"/status/{k}", "value": v} for k, v in held.items()]
        ops += [{"op": "add", "path": f"/status/{k}", "value": v} for k, v in status.items()]
        return await self.patch(resource, name, ops, namespace, patch_type="json", subresource="status")

    async def scale(
        self, resource: Resource, name: str, replicas: int, namespace: str | None = None
    ) -> Object:
        """Set ``spec.replicas`` through the scale subresource."""
        return await self.patch(
            resource, name, {"spec": {"replicas": replicas}}, namespace, subresource="scale"
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Literal["Background", "Foreground", "Orphan"] | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Object:
        """Delete; ``uid``/``resource_version`` are preconditions (409 when they no longer hold)."""
        options: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            options["propagationPolicy"] = propagation
        if uid or resource_version:
            options["preconditions"] = {
                k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v
            }
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = resource.path(self._namespace(resource, namespace), name)
        return await self.request("DELETE", resource, path, verb="delete", body=options)

    async def delete_if_present(self, resource: Resource, name: str, namespace: str | None = None) -> None:
        """Delete; nothing when it is gone already."""
        try:
            await self.delete(resource, name, namespace)
        except ApiError as err:
            if not err.not_found:
                raise
