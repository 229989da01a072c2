"""The launch decision of one PE, without a server: adoption, write-ahead, stale caches."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.contract import CONTENT_ID_ANNOTATION, LAUNCH_COUNT_LABEL, POD_TEMPLATE_ANNOTATION
from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.controller.children.pod import pod_template_hash
from streams_k8s.controller.pes.lifecycle import Action, decide, started_status


def pe(launch: int = 0, phase: str | None = None, **spec: Any) -> ProcessingElement:
    return ProcessingElement.from_wire(
        {
            "metadata": {"name": "app-0", "namespace": "default", "uid": "u1"},
            "spec": {"id": 0, "contentId": "c1", **spec},
            "status": {"launchCount": launch, "phase": phase},
        }
    )


def pod(launch: int, phase: str = "Running", content: str = "c1", node: str | None = "n1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"app-0-{launch}",
            "labels": {LAUNCH_COUNT_LABEL: str(launch)},
            "annotations": {CONTENT_ID_ANNOTATION: content},
        },
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_first_launch_waits_then_creates_after_a_predecessor() -> None:
    assert decide(pe(), [], previous_launches=0, ready=False).action is Action.WAIT
    decision = decide(pe(), [], previous_launches=3, ready=True)
    assert (decision.action, decision.launch) == (Action.CREATE, 4)


def test_a_pod_created_before_a_restart_is_adopted_not_duplicated() -> None:
    pending = decide(pe(), [pod(1, "Pending", node=None)], previous_launches=0, ready=True)
    assert pending.action is Action.NONE  # recorded once running: one status write per launch
    running = decide(pe(), [pod(1)], previous_launches=0, ready=True)
    assert (running.action, running.launch, running.phase, running.node, running.pod) == (
        Action.RECORD,
        1,
        "Running",
        "n1",
        "app-0-1",
    )


def test_a_written_ahead_launch_retires_the_old_pod_and_creates_the_new_one() -> None:
    decision = decide(pe(2, "Pending"), [pod(1, "Failed")], previous_launches=0, ready=True)
    assert (decision.action, decision.launch) == (Action.CREATE, 2)
    assert [(p["metadata"]["name"], zombie) for p, zombie in decision.retire] == [("app-0-1", False)]
    kept = decide(
        pe(2, "Pending", deleteFailedPod=False),
        [pod(1, "Failed")],
        previous_launches=0,
        ready=True,
    )
    assert [zombie for _, zombie in kept.retire] == [True]


def test_a_stale_cache_never_lowers_the_launch_count() -> None:
    # Our own relaunch to 2 is not in the PE cache yet, its pod is: do nothing.
    decision = decide(pe(1, "Running", restartDeletedPod=False), [pod(2)], previous_launches=0, ready=True)
    assert decision.action is Action.NONE


def test_content_change_relaunches_even_when_not_restartable() -> None:
    decision = decide(
        pe(1, "Running", restartable=False), [pod(1, content="old")], previous_launches=0, ready=True
    )
    assert (decision.action, decision.launch, decision.reason) == (Action.RELAUNCH, 2, "content changed")


def test_a_pod_made_from_other_pe_settings_is_relaunched_one_without_the_record_is_kept() -> None:
    """An edit of the PE's pod settings replaces its pod; a restart policy edit does not; a pod
    made before pods carried the hash is adopted as it is."""
    edited = pe(1, "Running", restartDeletedPod=False, runtimeTraceLevel="TRACE")
    made = pod(1)
    made["metadata"]["annotations"][POD_TEMPLATE_ANNOTATION] = pod_template_hash(pe().spec)
    decision = decide(edited, [made], previous_launches=0, ready=True)
    assert (decision.action, decision.launch, decision.reason) == (Action.RELAUNCH, 2, "pod template changed")
    policy_only = pe(1, "Running", restartFailedPod=True, deleteFailedPod=False)
    assert decide(policy_only, [made], previous_launches=0, ready=True).action is not Action.RELAUNCH
    assert decide(edited, [pod(1)], previous_launches=0, ready=True).action is not Action.RELAUNCH


def test_a_pod_that_starts_running_is_a_record_a_connectivity_report_can_carry() -> None:
    first = decide(pe(), [pod(1)], previous_launches=0, ready=True)
    relaunched = decide(pe(2, "Pending"), [pod(2)], previous_launches=0, ready=True)
    assert first.started
    assert relaunched.started
    assert started_status(pe(), [pod(1)]) == {
        "launchCount": 1,
        "phase": "Running",
        "nodeName": "n1",
        "podName": "app-0-1",
    }
    # Nothing to carry: still pending, already recorded, or a failure (recorded at once).
    assert started_status(pe(), [pod(1, "Pending")]) is None
    recorded = pe(1, "Running").to_wire()
    recorded["status"].update(nodeName="n1", podName="app-0-1")
    assert started_status(ProcessingElement.from_wire(recorded), [pod(1)]) is None
    failed = decide(pe(), [pod(1, "Failed")], previous_launches=0, ready=True)
    assert (failed.action, failed.started) == (Action.RECORD, False)
    assert started_status(pe(), [pod(1, "Failed")]) is None


def test_a_pod_deleted_while_its_run_waits_to_be_recorded_counts_as_a_launch() -> None:
    # Seen running (launch 1) but not recorded yet, then deleted: a restart, not a re-creation.
    restarted = decide(pe(restartDeletedPod=True), [], previous_launches=0, ready=True, ran_unrecorded=1)
    assert (restarted.action, restarted.launch) == (Action.RELAUNCH, 2)
    left = decide(pe(restartDeletedPod=False), [], previous_launches=0, ready=True, ran_unrecorded=1)
    assert (left.action, left.launch, left.phase) == (Action.RECORD, 1, "Deleted")
    # Without that memory the pod of launch 1 is simply created again.
    again = decide(pe(restartDeletedPod=True), [], previous_launches=0, ready=True)
    assert (again.action, again.launch) == (Action.CREATE, 1)


def test_a_suspended_pe_has_its_pods_removed_and_is_relaunched_on_resume() -> None:
    suspended = decide(pe(2, "Running", suspended=True), [pod(2)], previous_launches=0, ready=True)
    assert (suspended.action, suspended.phase) == (Action.RECORD, "Suspended")
    assert [p["metadata"]["name"] for p, _ in suspended.retire] == ["app-0-2"]
    still = decide(pe(2, "Suspended", suspended=True), [], previous_launches=0, ready=True)
    assert still.action is Action.NONE
    resumed = decide(pe(2, "Suspended"), [], previous_launches=0, ready=True)
    assert (resumed.action, resumed.launch, resumed.reason) == (Action.RELAUNCH, 3, "resumed")


def test_a_restart_nonce_relaunches_the_pod() -> None:
    made = pod(1)
    made["metadata"]["annotations"][POD_TEMPLATE_ANNOTATION] = pod_template_hash(pe().spec)
    for nonce in ({"restartNonce": "a"}, {"jobRestartNonce": "b"}):
        decision = decide(pe(1, "Running", **nonce), [made], previous_launches=0, ready=True)
        assert (decision.action, decision.launch) == (Action.RELAUNCH, 2), nonce
