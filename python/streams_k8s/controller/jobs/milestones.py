"""A Job's milestone Events, derived from its status: what the status says happened has its Event.

The job controller writes a milestone into the Job's status (the durable record); this controller
reads the status and records the matching Event once per occurrence (`EventRecorder.record_once`:
named after the Job's uid, the reason and the occurrence, so recording it again changes nothing).
A controller killed between the status write and its Event, or an Event write that failed for
good, is made up for on the next look at the Job, by any replica, after a restart too.

| status says | Event | occurrence |
|---|---|---|
| `id` and `submissionStarted` | Normal SubmissionStarted | submission start + attempt |
| phase Submitted or later (Running, Upgrading, …) | Normal SubmissionSucceeded | submission start + attempt |
| condition PodsReady True | Normal Running | the condition's lastTransitionTime |
| phase Failed | Warning SubmissionFailed | submission start + attempt + reason |

Milestones older than `EVENT_TTL` (the API server's default Event lifetime) are not recorded
again: their Events have expired as they should.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from streams_k8s.api.job import JobPhase
from streams_k8s.controller.jobs.health import PODS_READY
from streams_k8s.controller.jobs.status import JobStatusView, submitted_message
from streams_k8s.controller.kinds import JOBS
from streams_k8s.k8s.conditions import parse_time
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.events import EventKind
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey, meta

EVENT_TTL = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Milestone:
    kind: EventKind
    reason: str
    note: str
    occurrence: str
    at: datetime | None


def milestones(status: JobStatusView) -> list[Milestone]:
    """The milestones ``status`` records (see the module docs)."""
    started = status.submission_started  # set anew by every submission (first, retried, restarted)
    # not the generation: an edit applied to a running job is an upgrade, not a new submission
    attempt = f"{started.isoformat() if started else '-'}/{status.submission_attempts or 1}"
    found: list[Milestone] = []
    if status.id is not None and started is not None:
        note = f"submitting as job id {status.id}"
        found.append(Milestone("Normal", "SubmissionStarted", note, attempt, started))
    if status.phase not in (None, JobPhase.SUBMITTING, JobPhase.FAILED, JobPhase.DELETING):
        note = status.message or submitted_message(status.processing_elements or 0)
        found.append(Milestone("Normal", "SubmissionSucceeded", note, attempt, started))
    ready = status.condition(PODS_READY)
    if ready is not None and ready.get("status") == "True":
        note = f"all {status.processing_elements or 0} PE pods are ready"
        since = str(ready.get("lastTransitionTime"))
        found.append(Milestone("Normal", "Running", note, since, parse_time(since)))
    if status.phase == JobPhase.FAILED:
        note = status.message or "the submission failed"
        reason = note.split(":", 1)[0]
        found.append(Milestone("Warning", "SubmissionFailed", note, f"{attempt}/{reason}", None))
    return found


class JobMilestones:
    """Keeps every Job's milestone Events in step with its status (see the module docs)."""

    def __init__(self, manager: Manager, component: str = "streams-job-controller") -> None:
        self.jobs = manager.informer(JOBS)
        self.recorder = manager.event_recorder(component)
        self.controller = manager.controller("job-milestones", self.reconcile, workers=2)
        self.controller.watch(self.jobs)

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        obj = self.jobs.store.get(key)
        if obj is None or meta(obj).get("deletionTimestamp"):
            return None
        oldest = datetime.now(UTC) - EVENT_TTL
        for m in milestones(JobStatusView.of(obj)):
            if m.at is None or m.at >= oldest:
                await self.recorder.record_once(obj, m.kind, m.reason, m.note, m.occurrence, m.at)
        return None
