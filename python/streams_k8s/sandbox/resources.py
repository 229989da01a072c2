"""Resource types the API server serves: built-in kinds and kinds registered by CRDs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ScaleSpec:
    """Where a scale subresource reads and writes replicas (JSON paths like `.spec.replicas`)."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None


@dataclass(frozen=True)
class Subresource:
    """A subresource beyond status and scale, as discovery lists it (kind and verbs)."""

    name: str
    kind: str
    verbs: tuple[str, ...] = ("create",)
    group: str | None = None
    version: str | None = None


@dataclass
class ResourceType:
    """One served resource: names, scope, subresources and (for CRDs) schema per version."""

    group: str
    versions: list[str]
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    status_subresource: bool = False
    scale: ScaleSpec | None = None
    builtin: bool = True
    generation: bool = False
    # Field selector paths beyond metadata.name / metadata.namespace.
    field_selectors: tuple[str, ...] = ()
    # CRD only: structural schema and printer columns per version.
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    printer_columns: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    validations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    extra_subresources: tuple[Subresource, ...] = ()
    # The version objects are stored in (CRDs: the `storage: true` one).
    storage_version: str = ""
    # DELETE answers with the deleted object (else a Status), as the kind's real storage does.
    return_deleted_object: bool = False
    # Another resource whose storage this one is a converted view of (events.k8s.io -> core events).
    storage_of: tuple[str, str] | None = None
    # A review (TokenReview, SubjectAccessReview...): created and answered, never stored.
    review: bool = False

    def __post_init__(self) -> None:
        self.storage_version = self.storage_version or self.versions[0]

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def store_key(self) -> tuple[str, str]:
        """The collection the objects live in (shared by a resource and its views)."""
        return self.storage_of or self.key

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery(self) -> list[dict[str, Any]]:
        """The APIResource entries for this resource and its subresources."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ["create"] if self.review else VERBS,
        }
        if self.short_names:
            entry["shortNames"] = self.short_names
        if self.categories:
            entry["categories"] = self.categories
        out = [entry]
        if self.status_subresource:
            out.append(self._sub("status", self.kind, ["get", "patch", "update"]))
        if self.scale is not None:
            out.append(
                self._sub("scale", "Scale", ["get", "patch", "update"], group="autoscaling", version="v1")
            )
        out.extend(
            self._sub(s.name, s.kind, list(s.verbs), s.group, s.version) for s in self.extra_subresources
        )
        return out

    @property
    def subresources(self) -> tuple[str, ...]:
        """Every subresource served (status, scale and the extra ones)."""
        served = (*(("status",) if self.status_subresource else ()), *(("scale",) if self.scale else ()))
        return (*served, *(s.name for s in self.extra_subresources))

    def _sub(
        self, name: str, kind: str, verbs: list[str], group: str | None = None, version: str | None = None
    ) -> dict[str, Any]:
        sub: dict[str, Any] = {
            "name": f"{self.plural}/{name}",
            "singularName": "",
            "namespaced": self.namespaced,
            "kind": kind,
            "verbs": verbs,
        }
        if group is not None:
            sub["group"] = group
            sub["version"] = version
        return sub


def builtin_types() -> list[ResourceType]:
    """The built-in kinds the system uses, with the subresources the real API server has."""
    core, apps = "", "apps"
    return [
        ResourceType(
            core,
            ["v1"],
            "namespaces",
            "namespace",
            "Namespace",
            False,
            ["ns"],
            status_subresource=True,
            field_selectors=("status.phase",),
            extra_subresources=(Subresource("finalize", "Namespace", ("update",)),),
            return_deleted_object=True,
        ),
        ResourceType(
            core,
            ["v1"],
            "nodes",
            "node",
            "Node",
            False,
            ["no"],
            status_subresource=True,
            field_selectors=("spec.unschedulable",),
        ),
        ResourceType(
            core,
            ["v1"],
            "pods",
            "pod",
            "Pod",
            True,
            ["po"],
            ["all"],
            status_subresource=True,
            generation=True,
            field_selectors=(
                "spec.nodeName",
                "status.phase",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "status.podIP",
            ),
            extra_subresources=(
                Subresource("attach", "PodAttachOptions", ("create", "get")),
                Subresource("binding", "Binding"),
                Subresource("eviction", "Eviction", group="policy", version="v1"),
                Subresource("exec", "PodExecOptions", ("create", "get")),
                Subresource("log", "Pod", ("get",)),
                Subresource("portforward", "PodPortForwardOptions", ("create", "get")),
            ),
            return_deleted_object=True,
        ),
        ResourceType(
            core,
            ["v1"],
            "services",
            "service",
            "Service",
            True,
            ["svc"],
            ["all"],
            status_subresource=True,
            return_deleted_object=True,
        ),
        ResourceType(core, ["v1"], "endpoints", "endpoints", "Endpoints", True, ["ep"]),
        ResourceType(core, ["v1"], "configmaps", "configmap", "ConfigMap", True, ["cm"]),
        ResourceType(core, ["v1"], "secrets", "secret", "Secret", True, field_selectors=("type",)),
        ResourceType(
            core,
            ["v1"],
            "serviceaccounts",
            "serviceaccount",
            "ServiceAccount",
            True,
            ["sa"],
            extra_subresources=(
                Subresource("token", "TokenRequest", group="authentication.k8s.io", version="v1"),
            ),
        ),
        ResourceType(
            core,
            ["v1"],
            "events",
            "event",
            "Event",
            True,
            ["ev"],
            field_selectors=(
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ),
        ),
        ResourceType(
            apps,
            ["v1"],
            "statefulsets",
            "statefulset",
            "StatefulSet",
            True,
            ["sts"],
            ["all"],
            status_subresource=True,
            generation=True,
            scale=ScaleSpec(),
        ),
        ResourceType(
            apps,
            ["v1"],
            "deployments",
            "deployment",
            "Deployment",
            True,
            ["deploy"],
            ["all"],
            status_subresource=True,
            generation=True,
            scale=ScaleSpec(),
        ),
        ResourceType("coordination.k8s.io", ["v1"], "leases", "lease", "Lease", True),
        ResourceType(
            "discovery.k8s.io",
            ["v1"],
            "endpointslices",
            "endpointslice",
            "EndpointSlice",
            True,
            field_selectors=("addressType",),
        ),
        ResourceType(
            "networking.k8s.io",
            ["v1"],
            "networkpolicies",
            "networkpolicy",
            "NetworkPolicy",
            True,
            ["netpol"],
            generation=True,
        ),
        *_rbac_types(),
        *_review_types(),
        ResourceType(
            "events.k8s.io",
            ["v1"],
            "events",
            "event",
            "Event",
            True,
            ["ev"],
            field_selectors=(
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "reason",
                "reportingController",
                "type",
            ),
            storage_of=(core, "events"),
        ),
        ResourceType(
            "apiextensions.k8s.io",
            ["v1"],
            "customresourcedefinitions",
            "customresourcedefinition",
            "CustomResourceDefinition",
            False,
            ["crd", "crds"],
            ["api-extensions"],
            status_subresource=True,
            generation=True,
            return_deleted_object=True,
        ),
    ]


def _path(expr: str) -> list[str]:
    return [p for p in expr.strip().lstrip(".").split(".") if p]


def get_path(obj: Any, expr: str) -> Any:
    """The value at a simple JSON path (`.spec.replicas`), or None when absent."""
    cur = obj
    for part in _path(expr):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj: dict[str, Any], expr: str, value: Any) -> None:
    """Set the value at a simple JSON path, creating intermediate objects."""
    parts = _path(expr)
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value


def type_from_crd(crd: dict[str, Any]) -> ResourceType:
    """The served resource a CRD describes (the caller has validated the CRD's shape)."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec["versions"] if v.get("served", True)]
    scale: ScaleSpec | None = None
    status = False
    schemas: dict[str, dict[str, Any]] = {}
    columns: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        subs = v.get("subresources") or {}
        if "status" in subs:
            status = True
        if subs.get("scale"):
            sc = subs["scale"]
            scale = ScaleSpec(sc["specReplicasPath"], sc["statusReplicasPath"], sc.get("labelSelectorPath"))
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema:
            schemas[v["name"]] = schema
        columns[v["name"]] = v.get("additionalPrinterColumns") or []
    return ResourceType(
        group=spec["group"],
        versions=[v["name"] for v in versions],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        status_subresource=status,
        scale=scale,
        builtin=False,
        generation=True,
        return_deleted_object=True,
        field_selectors=tuple(
            f["jsonPath"].lstrip(".") for v in versions for f in v.get("selectableFields") or []
        ),
        schemas=schemas,
        printer_columns=columns,
        storage_version=next((v["name"] for v in spec["versions"] if v.get("storage")), versions[0]["name"]),
    )


def _rbac_types() -> list[ResourceType]:
    rbac = "rbac.authorization.k8s.io"
    return [
        ResourceType(rbac, ["v1"], "roles", "role", "Role", True),
        ResourceType(rbac, ["v1"], "rolebindings", "rolebinding", "RoleBinding", True),
        ResourceType(rbac, ["v1"], "clusterroles", "clusterrole", "ClusterRole", False),
        ResourceType(rbac, ["v1"], "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False),
    ]


def _review_types() -> list[ResourceType]:
    authn, authz = "authentication.k8s.io", "authorization.k8s.io"
    return [
        ResourceType(authn, ["v1"], "tokenreviews", "tokenreview", "TokenReview", False, review=True),
        ResourceType(
            authz,
            ["v1"],
            "subjectaccessreviews",
            "subjectaccessreview",
            "SubjectAccessReview",
            False,
            review=True,
        ),
        ResourceType(
            authz,
            ["v1"],
            "selfsubjectaccessreviews",
            "selfsubjectaccessreview",
            "SelfSubjectAccessReview",
            False,
            review=True,
        ),
        ResourceType(
            authz,
            ["v1"],
            "localsubjectaccessreviews",
            "localsubjectaccessreview",
            "LocalSubjectAccessReview",
            True,
            review=True,
        ),
    ]
