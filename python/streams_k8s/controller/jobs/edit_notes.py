"""What a job's status says of an edit that waits or will not run: the SpecApplied condition
(False, with the reason: paused, refused, waiting for a checkpoint, overdue, timed out), written
when it changes, and a Warning Event for a refusal."""

from __future__ import annotations

from streams_k8s.controller.jobs.health import EDIT_REFUSED, SPEC_APPLIED
from streams_k8s.controller.jobs.status import JobStatusView
from streams_k8s.controller.jobs.status_writes import status_written, write_status
from streams_k8s.controller.planning import JobFailure
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.conditions import set_condition
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.objects import Object, meta


class EditNotes:
    """Writes SpecApplied=False for an edit (see the module docs)."""

    def __init__(self, client: KubeClient, recorder: EventRecorder) -> None:
        self.client, self.recorder = client, recorder

    async def note(
        self, obj: Object, status: JobStatusView, reason: str, message: str
    ) -> tuple[Object, JobStatusView]:
        """SpecApplied=False with this reason, for the spec's generation (written when it changes)."""
        generation = int(meta(obj).get("generation") or 1)
        conditions = status.conditions
        if not set_condition(conditions, SPEC_APPLIED, "False", reason, message, generation):
            return obj, status
        status = status.with_(conditions=conditions, observed_generation=generation)
        written = await write_status(self.client, obj, status)
        return written, status_written(written, status)

    async def refuse(
        self, obj: Object, status: JobStatusView, failure: JobFailure
    ) -> tuple[Object, JobStatusView]:
        """The spec's generation will not run (EditRefused, a Warning Event): the job keeps running
        its applied spec."""
        message = (
            f"generation {meta(obj).get('generation')} is not applied: {failure.reason}: {failure.message}"
        )
        message += f"; the job keeps running generation {status.applied_generation}"
        written, status = await self.note(obj, status, EDIT_REFUSED, message)
        if written is not obj:
            await self.recorder.record(written, "Warning", "EditRefused", message)
        return written, status
