"""Which resource a request reaches, as kube-apiserver routes it, and its answers when none does:
Go's plain-text `404 page not found` where no API is installed (a group it does not know; a custom
resource's group, version or scope it does not serve), a NotFound Status with empty details in a
built-in group-version, MethodNotAllowed for a verb the resource lacks. A request to a deprecated
API gets its deprecation warning."""

from __future__ import annotations

from streams_k8s.sandbox import discovery
from streams_k8s.sandbox.errors import PageNotFound, method_not_allowed, not_served
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.request_info import RequestInfo
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.warnings import warn

# (group, version, resource) -> kube-apiserver's deprecation warning for it
_DEPRECATED = {
    ("", "v1", "endpoints"): "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
}
# What a resource's collection path serves; an object's path serves the rest.
_COLLECTION_VERBS = ("list", "watch", "create", "deletecollection")


def resolve(registry: Registry, info: RequestInfo) -> ResourceType:
    """The resource type `info` addresses in its scope, with its subresource if it has one."""
    rt = registry.served.get((info.group, info.version), {}).get(info.resource)
    builtin = discovery.builtin_group(registry, info.group)
    if rt is None or not _in_scope(rt, info):
        raise not_served() if builtin else PageNotFound()
    if info.subresource is not None and info.subresource not in rt.subresources and rt.builtin:
        raise not_served()
    if rt.review and (info.name is not None or info.verb != "create"):
        # create-only: the collection answers other verbs, no object path is routed
        raise not_served() if info.name is not None else method_not_allowed()
    collection = info.name is None
    if info.verb != "watch" and info.subresource is None and collection != (info.verb in _COLLECTION_VERBS):
        raise method_not_allowed()
    deprecation = _DEPRECATED.get((info.group, info.version, info.resource))
    if deprecation is not None:
        warn(deprecation)
    return rt


def _in_scope(rt: ResourceType, info: RequestInfo) -> bool:
    """A namespaced resource is addressed in a namespace (but for the verbs across namespaces); a
    cluster-scoped one never is."""
    if info.namespace is not None:
        return rt.namespaced
    return not rt.namespaced or info.verb in ("list", "watch", "deletecollection")
