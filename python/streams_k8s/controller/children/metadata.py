"""The metadata every child of a job carries: its labels, annotations and controlling owner."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    GENERATION_LABEL,
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
    SVC_PE,
)


@dataclass(frozen=True, slots=True)
class ChildMetadata:
    """Renders the ``metadata`` of a job's children.

    ``namespace``, ``generation`` and ``owner`` (an ``ownerReferences`` entry) are left out when
    None, as `plan -o yaml` shows children outside any cluster; ``annotations`` go on every child.
    """

    job: str
    namespace: str | None = None
    generation: int | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner: Mapping[str, Any] | None = None

    def labels(self) -> dict[str, str]:
        """The labels every child of the job has."""
        labels = {APP_LABEL: APP_VALUE, JOB_LABEL: self.job}
        if self.generation is not None:
            labels[GENERATION_LABEL] = str(self.generation)
        return labels

    def __call__(
        self, name: str, labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The metadata of the child ``name``, with its own ``labels`` and ``annotations``."""
        metadata: dict[str, Any] = {"name": name}
        if self.namespace is not None:
            metadata["namespace"] = self.namespace
        metadata["labels"] = {**self.labels(), **(labels or {})}
        if merged := {**self.annotations, **(annotations or {})}:
            metadata["annotations"] = merged
        if self.owner is not None:
            metadata["ownerReferences"] = [dict(self.owner)]
        return metadata


def pe_labels(pe_id: int) -> dict[str, str]:
    """What marks an object as PE ``pe_id``'s (its ConfigMap, Service, ProcessingElement, pods)."""
    return {PE_LABEL: str(pe_id), SVC_LABEL: SVC_PE}
