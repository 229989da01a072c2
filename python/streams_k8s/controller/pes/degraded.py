"""A job with PEs that stay stopped says so: READY counts what runs, a Degraded condition names them.

A PE whose pod a user deleted while `restartDeletedPod` is false has no pod (phase Deleted, see
`pes.lifecycle`): nothing restarts it. The Job then shows `Degraded=True` (reason `PodsDeleted`),
naming the PEs and the way back, which the PE controller's Warning Event (`PodDeleted`) says too:
setting `restartDeletedPod` on the PE starts it again (its launch count goes on).
"""

from __future__ import annotations

from collections.abc import Iterable

from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.controller.pes.lifecycle import DELETED
from streams_k8s.k8s.objects import Object, meta

DEGRADED = "Degraded"
_SHOWN = 10  # PEs named in the condition's message


def way_back(name: str) -> str:
    """The command that starts a stopped PE again."""
    return f"""kubectl patch stp {name} --type=merge -p '{{"spec":{{"restartDeletedPod":true}}}}'"""


def stopped_note(pe: ProcessingElement) -> str:
    """The Warning Event's note for a PE left stopped after its pod was deleted."""
    pod = pe.status.pod_name if pe.status is not None and pe.status.pod_name else "its pod"
    return (
        f"PE {pe.spec.id} ({pe.metadata.name}) is stopped: {pod} was deleted and restartDeletedPod is "
        f"false; to start it again: {way_back(str(pe.metadata.name))}"
    )


def _stopped(pe: Object) -> bool:
    return (pe.get("status") or {}).get("phase") == DELETED


def degraded_condition(pes: Iterable[Object]) -> tuple[str, str, str]:
    """(status, reason, message) of the Job's Degraded condition."""
    stopped = sorted(
        (pe for pe in pes if _stopped(pe)), key=lambda pe: int((pe.get("spec") or {}).get("id", 0))
    )
    if not stopped:
        return "False", "AllPesStarted", "no PE is stopped"
    names = [str(meta(pe).get("name")) for pe in stopped]
    shown = ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
    message = (
        f"{len(names)} PEs stopped after their pods were deleted (restartDeletedPod is false): {shown}; "
        f"to start one again: {way_back(names[0])}"
    )
    return "True", "PodsDeleted", message
