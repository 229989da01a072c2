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
