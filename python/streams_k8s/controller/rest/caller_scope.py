"""Which namespaces' jobs a request to the instance API sees.

The paths name a job by name or id only (the runtime's contract), and names and ids are unique per
namespace only: two watched namespaces may each have a job `app` with id 0. A request sees the
jobs of its caller's namespace when it is known, so each namespace's PEs reach their own jobs as
with an operator per namespace: the namespace of the PE pod at its source address, else the one
the host it called names (PE pods call `streams-api.<their namespace>`; another watched namespace's
`streams-api` is an ExternalName of the operator's, deploy/README.md). Any other caller sees every
watched namespace (a name found in several is a 409 naming them). This only chooses which job a
path names: who may write on it is the write guard's to say.
"""

from __future__ import annotations

from contextvars import ContextVar

from aiohttp import web
from aiohttp.typedefs import Handler

from streams_k8s.k8s.objects import Object, meta
from streams_k8s.k8s.pod_addresses import PodsByAddress

# the Service PE pods call the instance API by, in their namespace (deploy/service.yaml)
SERVICE = "streams-api"
# the caller's namespace (None: not known), for the request's task
_CALLER: ContextVar[str | None] = ContextVar("caller_namespace", default=None)


class CallerScope:
    def __init__(self, watched: tuple[str, ...], pods: PodsByAddress | None = None) -> None:
        """``watched``: the namespaces the operator watches (empty: all); ``pods``: the pod cache
        by address (None: no request is known to come from a pod)."""
        self.watched = frozenset(watched)
        self.pods = pods

    def admits(self, obj: Object) -> bool:
        """Whether the current request sees this object of the job's namespace."""
        namespace = meta(obj).get("namespace")
        caller = _CALLER.get()
        if caller is not None:
            return namespace == caller
        return not self.watched or namespace in self.watched

    def caller(self, peer: str | None, host: str) -> str | None:
        """The caller's namespace: its pod's, else the one the host names (`streams-api.<ns>...`)."""
        from_pod = self.pods.namespace_at(peer) if self.pods is not None and peer else None
        if from_pod is not None:
            return from_pod
        labels = host.split(":", 1)[0].split(".")  # without the port (an IP names no Service)
        if len(labels) < 2 or labels[0] != SERVICE or not labels[1]:
            return None
        return labels[1] if not self.watched or labels[1] in self.watched else None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        token = _CALLER.set(self.caller(request.remote, request.host))
        try:
            return await handler(request)
        finally:
            _CALLER.reset(token)
