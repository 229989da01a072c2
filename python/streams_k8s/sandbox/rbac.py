"""Authorization: RBAC evaluated over the stored Roles, ClusterRoles and their bindings, and the
review APIs that ask it (SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview).

The semantics are kube-apiserver's RBAC authorizer's:
- a ClusterRoleBinding grants its ClusterRole's rules everywhere (every namespace, cluster-scoped
  resources and non-resource URLs); a RoleBinding grants its Role's (same namespace) or
  ClusterRole's rules in its own namespace only, and never non-resource URLs;
- a subject matches by User name, Group membership, or ServiceAccount (``system:serviceaccount:
  <ns>:<name>``; a subject without a namespace takes the binding's);
- a rule matches when its verbs hold the verb or ``*``, its apiGroups the group or ``*``, its
  resources ``*``, the resource, ``resource/subresource`` or ``*/subresource``, and its
  resourceNames are empty or hold the (non-empty) name; a non-resource rule matches the path
  exactly, by ``*``, or by a prefix ending in ``*``;
- members of ``system:masters`` are allowed everything, as by kube-apiserver's privileged-group
  authorizer. Nothing denies explicitly: a request no rule allows is not allowed (no reason).

ClusterRole aggregation is not evaluated. The sandbox bootstraps the roles the project relies on
(``cluster-admin``, ``system:auth-delegator``, ``system:basic-user``, ``system:discovery``,
``system:public-info-viewer``) with kube-apiserver's rules and bindings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streams_k8s.sandbox.admission.field_errors import FieldErrors
from streams_k8s.sandbox.authn import AUTHENTICATED, SUPERUSERS, Identity, service_account_user
from streams_k8s.sandbox.errors import bad_request, invalid
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.store import clone

RBAC = "rbac.authorization.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
_UNAUTHENTICATED = "system:unauthenticated"


@dataclass(frozen=True)
class Attributes:
    """What a request does, on the authorizer's terms."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    path: str = ""  # a non-resource request's path
    resource_request: bool = True


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def _resource_matches(rule: dict[str, Any], attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for resource in rule.get("resources") or ():
        if resource in ("*", combined):
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def rule_allows(rule: dict[str, Any], attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or ()
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(
            url in ("*", attrs.path) or (url.endswith("*") and attrs.path.startswith(url.rstrip("*")))
            for url in rule.get("nonResourceURLs") or ()
        )
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and attrs.group not in groups:
        return False
    if not _resource_matches(rule, attrs):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


def _applies(subject: dict[str, Any], user: Identity, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(user.user == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.user == service_account_user(namespace, str(name))
    return False


class Authorizer:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def _objects(self, plural: str, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        return self.registry.items(self.registry.types[(RBAC, plural)], namespace)

    def _role_rules(self, ref: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "ClusterRole":
            role = self.registry.find(self.registry.types[(RBAC, "clusterroles")], None, name)
        elif kind == "Role" and namespace:
            role = self.registry.find(self.registry.types[(RBAC, "roles")], namespace, name)
        else:
            role = None
        return list((role or {}).get("rules") or ())

    def authorize(self, user: Identity, attrs: Attributes) -> Decision:
        if SUPERUSERS in user.groups:
            return Decision(True, f"allowed: {user.user} is in {SUPERUSERS}")
        for binding in self._objects("clusterrolebindings"):
            if self._grants(binding, "", user, attrs):
                return Decision(True, self._reason("ClusterRoleBinding", binding, user))
        if attrs.resource_request and attrs.namespace:
            for binding in self._objects("rolebindings", attrs.namespace):
                if self._grants(binding, attrs.namespace, user, attrs):
                    return Decision(True, self._reason("RoleBinding", binding, user, attrs.namespace))
        return Decision(False)

    def _grants(self, binding: dict[str, Any], namespace: str, user: Identity, attrs: Attributes) -> bool:
        if not any(_applies(s, user, namespace) for s in binding.get("subjects") or ()):
            return False
        rules = self._role_rules(binding.get("roleRef") or {}, namespace)
        return any(rule_allows(rule, attrs) for rule in rules)

    @staticmethod
    def _reason(kind: str, binding: dict[str, Any], user: Identity, namespace: str = "") -> str:
        ref = binding.get("roleRef") or {}
        where = f' in namespace "{namespace}"' if namespace else ""
        return (
            f'RBAC: allowed by {kind} "{binding["metadata"]["name"]}{where}" of {ref.get("kind")} '
            f'"{ref.get("name")}" to {user.user}'
        )

    # -- the review APIs ------------------------------------------------------------------------

    def review(self, kind: str, namespace: str | None, body: Any, caller: Identity) -> dict[str, Any]:
        """Answer a SubjectAccessReview, LocalSubjectAccessReview or SelfSubjectAccessReview."""
        if not isinstance(body, dict):
            raise bad_request(f"the body of a {kind} must be a JSON object")
        spec = body.get("spec") or {}
        if not isinstance(spec, dict):
            raise bad_request("spec must be an object")
        resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        errors = FieldErrors()
        if (resource is None) == (non_resource is None):
            why = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
            errors.invalid("spec", non_resource, why)
        if kind == "SelfSubjectAccessReview":
            user = caller
        else:
            groups = spec.get("groups") or []
            if not spec.get("user") and not groups:
                errors.invalid(
                    "spec.user", spec.get("user") or "", "at least one of user or group must be specified"
                )
            user = Identity(str(spec.get("user") or ""), str(spec.get("uid") or ""), tuple(map(str, groups)))
        if kind == "LocalSubjectAccessReview":
            if isinstance(resource, dict) and (resource.get("namespace") or "") != namespace:
                errors.invalid(
                    "spec.resourceAttributes.namespace",
                    resource.get("namespace") or "",
                    "must match metadata.namespace",
                )
            if non_resource is not None:
                errors.invalid(
                    "spec.nonResourceAttributes", non_resource, "disallowed on this kind of request"
                )
        if errors:  # the internal object's kind is empty when kube-apiserver words this error
            raise invalid("", "", errors, AUTHORIZATION)
        if isinstance(resource, dict):
            attrs = Attributes(
                verb=str(resource.get("verb") or ""),
                group=str(resource.get("group") or ""),
                resource=str(resource.get("resource") or ""),
                subresource=str(resource.get("subresource") or ""),
                name=str(resource.get("name") or ""),
                namespace=str(resource.get("namespace") or ""),
            )
        else:
            attrs = Attributes(
                verb=str((non_resource or {}).get("verb") or ""),
                path=str((non_resource or {}).get("path") or ""),
                resource_request=False,
            )
        decision = self.authorize(user, attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        metadata: dict[str, Any] = {"creationTimestamp": None}
        if namespace is not None:
            metadata["namespace"] = namespace
        return {
            "apiVersion": f"{AUTHORIZATION}/v1",
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    return {"metadata": {"name": name, "labels": labels}, "rules": rules}


def _cluster_binding(name: str, role: str, *groups: str) -> dict[str, Any]:
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    return {
        "metadata": {"name": name, "labels": labels},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups],
    }


_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*"]
BOOTSTRAP_ROLES = [
    _cluster_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _cluster_role(
        "system:auth-delegator",
        [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": [AUTHORIZATION], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        ],
    ),
    _cluster_role(
        "system:basic-user",
        [
            {
                "apiGroups": [AUTHORIZATION],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            }
        ],
    ),
    _cluster_role(
        "system:discovery",
        [{"nonResourceURLs": [*_DISCOVERY_URLS, "/readyz", "/version", "/version/"], "verbs": ["get"]}],
    ),
    _cluster_role(
        "system:public-info-viewer",
        [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}],
    ),
]
BOOTSTRAP_BINDINGS = [
    _cluster_binding("cluster-admin", "cluster-admin", SUPERUSERS),
    _cluster_binding("system:basic-user", "system:basic-user", AUTHENTICATED),
    _cluster_binding("system:discovery", "system:discovery", AUTHENTICATED),
    _cluster_binding(
        "system:public-info-viewer", "system:public-info-viewer", AUTHENTICATED, _UNAUTHENTICATED
    ),
]


def bootstrap(registry: Registry) -> None:
    """Create the default ClusterRoles and ClusterRoleBindings a new cluster has."""
    for plural, objects in (("clusterroles", BOOTSTRAP_ROLES), ("clusterrolebindings", BOOTSTRAP_BINDINGS)):
        rt = registry.types.get((RBAC, plural))
        if rt is None:  # the group is not served (disabled_apis)
            continue
        for obj in objects:
            registry.create(rt, "v1", None, clone(obj))
