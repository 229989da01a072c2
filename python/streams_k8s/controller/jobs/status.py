"""A Job's status as the job controller reads and writes it: typed fields over the wire dict.

The status is the controller's write-ahead log (see `jobs.controller`), so what a patch sends must
be exactly what was read plus what changed: the view keeps the API server's dict (``raw``, whose
field names are `JobStatus`'s wire names) and gives typed reads of it; `with_` returns a copy with
some fields changed (enums and times written as the API server writes them, None removing a field
in a merge patch), `cleared` one that removes every field it had.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict, Unpack

from streams_k8s.api.job import JobPhase, JobStatus, UpgradeRecord
from streams_k8s.k8s.conditions import ConditionDict, find_condition, format_time, parse_time
from streams_k8s.k8s.objects import Object

# Field name → wire name ("generation_id" → "generationId"), from the model.
_WIRE = {name: field.alias or name for name, field in JobStatus.model_fields.items()}


class StatusChanges(TypedDict, total=False):
    """Fields `JobStatusView.with_` may change (None removes the field)."""

    phase: JobPhase
    id: int
    generation_id: int
    observed_generation: int
    conditions: list[ConditionDict]
    message: str | None
    submission_started: datetime
    submission_attempts: int
    next_attempt: datetime | None
    planned_nodes: int
    bundle_digest: str
    application_name: str
    processing_elements: int
    processing_elements_ready: int
    pods_ready: int
    applied_generation: int
    applied_spec: dict[str, Any]
    upgrade: UpgradeRecord | None
    last_stable_spec: dict[str, Any]
    last_stable_generation: int
    last_stable_bundle_digest: str


def _wire(value: object) -> object:
    if isinstance(value, JobPhase):
        return value.value
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, UpgradeRecord):
        return value.to_wire()
    return value


def _int(value: object) -> int | None:
    return int(str(value)) if value is not None else None


class JobStatusView:
    """One Job status (see the module docs); reads never fail on a field that is missing."""

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[str, Any] | None = None) -> None:
        self.raw: dict[str, Any] = dict(raw or {})

    @classmethod
    def of(cls, obj: Object) -> JobStatusView:
        """The status of a Job object as read from the API server or a cache."""
        return cls(obj.get("status"))

    def _get(self, field: str) -> Any:
        return self.raw.get(_WIRE[field])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobStatusView) and self.raw == other.raw

    __hash__ = None  # type: ignore[assignment]  # mutable content

    def __repr__(self) -> str:
        return f"JobStatusView({self.raw!r})"

    # --- typed reads ----------------------------------------------------------------------

    @property
    def phase(self) -> JobPhase | None:
        value = self._get("phase")
        return JobPhase(value) if value in JobPhase.__members__.values() else None

    @property
    def id(self) -> int | None:
        return _int(self._get("id"))

    @property
    def generation_id(self) -> int | None:
        return _int(self._get("generation_id"))

    @property
    def observed_generation(self) -> int | None:
        return _int(self._get("observed_generation"))

    @property
    def conditions(self) -> list[ConditionDict]:
        """A copy, to change with `k8s.conditions.set_condition` and write back with `with_` (each
        condition copied too: `set_condition` changes one in place, never the cached object's)."""
        return [dict(c) for c in self._get("conditions") or []]

    def condition(self, type_: str) -> ConditionDict | None:
        return find_condition(self._get("conditions"), type_)

    @property
    def message(self) -> str | None:
        value = self._get("message")
        return str(value) if value is not None else None

    @property
    def submission_started(self) -> datetime | None:
        return parse_time(self._get("submission_started"))

    @property
    def submission_attempts(self) -> int | None:
        return _int(self._get("submission_attempts"))

    @property
    def next_attempt(self) -> datetime | None:
        return parse_time(self._get("next_attempt"))

    @property
    def planned_nodes(self) -> int | None:
        return _int(self._get("planned_nodes"))

    @property
    def bundle_digest(self) -> str | None:
        value = self._get("bundle_digest")
        return str(value) if value is not None else None

    @property
    def application_name(self) -> str | None:
        value = self._get("application_name")
        return str(value) if value is not None else None

    @property
    def processing_elements(self) -> int | None:
        return _int(self._get("processing_elements"))

    @property
    def applied_generation(self) -> int | None:
        """The spec generation the children follow: a job submitted before it was recorded
        follows the generation it was submitted at."""
        return _int(self._get("applied_generation")) or self.observed_generation

    @property
    def applied_spec(self) -> dict[str, Any] | None:
        value = self._get("applied_spec")
        return dict(value) if value else None

    @property
    def last_stable_spec(self) -> dict[str, Any] | None:
        value = self._get("last_stable_spec")
        return dict(value) if value else None

    @property
    def last_stable_generation(self) -> int | None:
        return _int(self._get("last_stable_generation"))

    @property
    def last_stable_bundle_digest(self) -> str | None:
        value = self._get("last_stable_bundle_digest")
        return str(value) if value is not None else None

    @property
    def upgrade(self) -> UpgradeRecord | None:
        value = self._get("upgrade")
        return UpgradeRecord.model_validate(value) if value else None

    # --- changed copies -------------------------------------------------------------------

    def with_(self, **changes: Unpack[StatusChanges]) -> JobStatusView:
        """A copy with ``changes`` (fields it had keep their place; new ones come last)."""
        return JobStatusView({**self.raw, **{_WIRE[name]: _wire(value) for name, value in changes.items()}})

    def cleared(self) -> JobStatusView:
        """A copy that removes every field this one has (each None, for a merge patch)."""
        return JobStatusView(dict.fromkeys(self.raw))


def submitted_message(pes: int) -> str:
    """The Job's message from its submission until every PE pod is ready (then none: the phase and
    the PodsReady condition say how it runs, and a message left over would read as news)."""
    return f"{pes} PEs submitted"
