"""Authentication: who a bearer token is, TokenRequest (tokens for ServiceAccounts), TokenReview.

Three kinds of token are known:
- the sandbox's own token (``Sandbox(token=...)``): user ``system:admin`` in ``system:masters``
  (a superuser group, as the admin of a kubeadm cluster);
- the simulated cluster's token: user ``sandbox:simulation`` in ``system:nodes`` (it stands for
  the nodes' kubelets), so that its requests can be told apart from the operator's (faults spare
  them unless asked, the request log says who made each);
- tokens issued by ``POST .../serviceaccounts/{name}/token`` (TokenRequest): user
  ``system:serviceaccount:<ns>:<name>`` in ``system:serviceaccounts``,
  ``system:serviceaccounts:<ns>`` and ``system:authenticated``, for the requested audiences (by
  default the API server's), for ``expirationSeconds`` (default 3600, at least 600), optionally
  bound to a Pod or Secret. A token stops authenticating when it expires, when its
  ServiceAccount is deleted (or recreated: another uid) and when its bound object goes.

Tokens are opaque random strings, not JWTs: nothing may decode them. The sandbox's own request
authorization stays token-or-open: with a sandbox token every request needs that token or an
issued one (else 401); without one every request is accepted, as the admin unless it presents
an issued token. Nothing is authorized per request: RBAC is evaluated only for the review APIs.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from streams_k8s.sandbox.admission.field_errors import go_quote
from streams_k8s.sandbox.clock import now, stamp
from streams_k8s.sandbox.errors import ApiError, bad_request, cause, invalid, not_found
from streams_k8s.sandbox.registry import Registry

ADMIN = "system:admin"
SUPERUSERS = "system:masters"
AUTHENTICATED = "system:authenticated"
# What a token is for when its request names no audience (kube-apiserver's --api-audiences).
API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2**32
_BOUND_KINDS = {"Pod": ("", "pods"), "Secret": ("", "secrets")}


@dataclass(frozen=True)
class Identity:
    user: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"username": self.user, "groups": list(self.groups)}
        if self.uid:
            wire["uid"] = self.uid
        if self.extra:
            wire["extra"] = self.extra
        return wire


ADMIN_IDENTITY = Identity(ADMIN, groups=(SUPERUSERS, AUTHENTICATED))
# Who a request to the sandbox authenticated as (set by the API server on every request).
IDENTITY = web.RequestKey("identity", Identity)
SIMULATION = "sandbox:simulation"
SIMULATION_IDENTITY = Identity(SIMULATION, groups=("system:nodes", AUTHENTICATED))
POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"
POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
NODE_UID_EXTRA = "authentication.kubernetes.io/node-uid"


@dataclass(frozen=True)
class IssuedToken:
    namespace: str
    service_account: str
    service_account_uid: str
    audiences: tuple[str, ...]
    expires: float  # time.time()
    bound: tuple[str, str, str] | None  # (kind, name, uid)
    credential: str
    node: tuple[str, str] | None = None  # (name, uid) of the bound pod's node at issuance


def _invalid(why: str) -> str:
    """A token review's error as kube-apiserver's authenticator chain words it."""
    return f"[invalid bearer token, {why}]"


def _go_list(items: tuple[str, ...] | list[str]) -> str:
    """A list of strings as Go's %q prints it: `["a" "b"]`."""
    return "[" + " ".join(go_quote(item) for item in items) + "]"


def _group_version(api_version: str) -> str:
    """`v1` -> `/v1`, `apps/v1` -> `apps/v1`: a GroupVersion as Go prints it in a GroupVersionKind."""
    return api_version if "/" in api_version else f"/{api_version}"


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _timestamp(seconds: float) -> str:
    return stamp(datetime.fromtimestamp(seconds, UTC))


class Authenticator:
    def __init__(self, registry: Registry, admin_token: str | None) -> None:
        self.registry = registry
        self.admin_token = admin_token
        # The simulated cluster's credential: secret, so that no other client can pass for it.
        self.simulation_token = secrets.token_urlsafe(32)
        self._issued: dict[str, IssuedToken] = {}

    # -- requests to the sandbox ----------------------------------------------------------------

    def authenticate(self, header: str | None) -> Identity:
        """The caller of a request (401 where the sandbox requires a token and this is none)."""
        token = header[7:].strip() if header is not None and header[:7].lower() == "bearer " else None
        if token is not None and token == self.admin_token:
            return ADMIN_IDENTITY
        if token is not None and token == self.simulation_token:
            return SIMULATION_IDENTITY
        identity = self.identity(token, API_AUDIENCES)[0] if token else None
        if identity is not None:
            return identity
        if self.admin_token is not None:
            raise ApiError(401, "Unauthorized")
        return ADMIN_IDENTITY

    # -- tokens ---------------------------------------------------------------------------------

    def identity(
        self, token: str, audiences: tuple[str, ...]
    ) -> tuple[Identity | None, tuple[str, ...], str]:
        """(who, for which of ``audiences``, why not) of a token."""
        if token == self.admin_token:
            return ADMIN_IDENTITY, audiences, ""
        if token == self.simulation_token:
            return SIMULATION_IDENTITY, audiences, ""
        issued = self._issued.get(token)
        if issued is None:
            return None, (), "invalid bearer token"
        if issued.expires <= time.time():
            del self._issued[token]
            return None, (), "invalid bearer token, token has expired"
        accepted = tuple(a for a in audiences if a in issued.audiences)
        if not accepted:
            why = f"token audiences {_go_list(issued.audiences)} is invalid for the target audiences"
            return None, (), _invalid(f"{why} {_go_list(audiences)}")
        account = self.registry.find(
            self.registry.types[("", "serviceaccounts")], issued.namespace, issued.service_account
        )
        if account is None:
            return None, (), _invalid(f'serviceaccounts "{issued.service_account}" not found')
        if account["metadata"]["uid"] != issued.service_account_uid:
            why = f"service account UID ({account['metadata']['uid']}) does not match claim"
            return None, (), _invalid(f"{why} ({issued.service_account_uid})")
        extra = {"authentication.kubernetes.io/credential-id": [issued.credential]}
        if issued.bound is not None:
            kind, name, uid = issued.bound
            bound = self.registry.find(self.registry.types[_BOUND_KINDS[kind]], issued.namespace, name)
            if bound is None or bound["metadata"]["uid"] != uid:
                return None, (), _invalid("service account token has been invalidated")
            if kind == "Pod":
                extra[POD_NAME_EXTRA] = [name]
                extra[POD_UID_EXTRA] = [uid]
            if issued.node is not None:
                extra[NODE_NAME_EXTRA] = [issued.node[0]]
                extra[NODE_UID_EXTRA] = [issued.node[1]]
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{issued.namespace}", AUTHENTICATED)
        user = service_account_user(issued.namespace, issued.service_account)
        return Identity(user, issued.service_account_uid, groups, extra), accepted, ""

    def token_request(self, namespace: str, name: str, body: Any) -> dict[str, Any]:
        """``POST .../serviceaccounts/{name}/token``: a TokenRequest answered with a new token."""
        if not isinstance(body, dict):
            raise bad_request("the body of a TokenRequest must be a JSON object")
        account = self.registry.find(self.registry.types[("", "serviceaccounts")], namespace, name)
        if account is None:
            raise not_found("serviceaccounts", name)
        spec = dict(body.get("spec") or {})
        audiences = spec.get("audiences") or list(API_AUDIENCES)
        # null is unset (what a Go client's TokenRequest without one marshals to): the default
        seconds = spec.get("expirationSeconds")
        seconds = DEFAULT_EXPIRATION if seconds is None else seconds
        errors = []
        if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
            errors.append(cause("spec.audiences", "Invalid value: must be a list of non-empty strings"))
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < MIN_EXPIRATION:
            shown = f"Invalid value: {seconds!r}"
            errors.append(
                cause("spec.expirationSeconds", f"{shown}: may not specify a duration less than 10 minutes")
            )
        elif seconds > MAX_EXPIRATION:
            errors.append(
                cause(
                    "spec.expirationSeconds",
                    f"Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds",
                )
            )
        if errors:  # named "" as kube-apiserver names it (its internal object has no name yet)
            raise invalid("TokenRequest", "", errors, "authentication.k8s.io")
        bound = self._bound(namespace, name, spec.get("boundObjectRef"))
        token = secrets.token_urlsafe(32)
        expires = time.time() + seconds
        credential = f"JTI={secrets.token_hex(16)}"
        self._issued[token] = IssuedToken(
            namespace,
            name,
            account["metadata"]["uid"],
            tuple(audiences),
            expires,
            bound,
            credential,
            self._node_of(namespace, bound),
        )
        spec.update({"audiences": audiences, "expirationSeconds": seconds})
        spec.setdefault("boundObjectRef", None)  # a pointer without omitempty: null when unset
        return {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now()},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": _timestamp(expires)},
        }

    def _bound(self, namespace: str, account: str, ref: Any) -> tuple[str, str, str] | None:
        """(kind, name, uid) of the object a token is bound to: a Pod running as the account, or a
        Secret."""
        if not ref:
            return None
        if not isinstance(ref, dict) or ref.get("kind") not in _BOUND_KINDS:
            kind = ref.get("kind", "") if isinstance(ref, dict) else ""
            version = ref.get("apiVersion", "") if isinstance(ref, dict) else ""
            raise bad_request(f"cannot bind token to object of type {_group_version(version)}, Kind={kind}")
        kind, name = str(ref["kind"]), str(ref.get("name") or "")
        obj = self.registry.find(self.registry.types[_BOUND_KINDS[kind]], namespace, name)
        if obj is None:
            raise not_found(_BOUND_KINDS[kind][1], name)
        if kind == "Pod" and ((obj.get("spec") or {}).get("serviceAccountName") or "default") != account:
            raise bad_request(
                f'cannot bind token for serviceaccount "{account}" to pod running with different '
                "serviceaccount name."
            )
        if ref.get("uid") and ref["uid"] != obj["metadata"]["uid"]:
            raise ApiError(
                409, f"the uid of {kind.lower()} {name} is {obj['metadata']['uid']}, not {ref['uid']}"
            )
        return kind, name, str(obj["metadata"]["uid"])

    def _node_of(self, namespace: str, bound: tuple[str, str, str] | None) -> tuple[str, str] | None:
        """The node a bound pod runs on, as a token issued now records it."""
        if bound is None or bound[0] != "Pod":
            return None
        pod = self.registry.find(self.registry.types[_BOUND_KINDS["Pod"]], namespace, bound[1])
        node_name = ((pod or {}).get("spec") or {}).get("nodeName")
        node = self.registry.find(self.registry.types[("", "nodes")], None, node_name) if node_name else None
        return (str(node_name), str(node["metadata"]["uid"])) if node is not None else None

    def token_review(self, body: Any) -> dict[str, Any]:
        """``POST /apis/authentication.k8s.io/v1/tokenreviews``."""
        if not isinstance(body, dict):
            raise bad_request("the body of a TokenReview must be a JSON object")
        spec = body.get("spec") or {}
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise invalid(
                "TokenReview",
                "",
                [cause("spec.token", "Required value", "FieldValueRequired")],
                "authentication.k8s.io",
            )
        wanted = tuple(spec.get("audiences") or API_AUDIENCES)
        identity, audiences, error = self.identity(token, wanted)
        status: dict[str, Any] = {"authenticated": True} if identity is not None else {}  # omitempty
        if identity is not None:
            status["user"] = identity.to_wire()
            status["audiences"] = list(audiences)
        else:
            status["user"] = {}
            status["error"] = error
        return {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
