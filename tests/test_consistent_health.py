"""Region health from PE objects and pods."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.processing_element import ProcessingElement
from streams_k8s.consistent.fsm import Health
from streams_k8s.consistent.health import PodObservation, region_health


def pe(
    pe_id: int, connectivity: str = "Full", launch: int = 1, with_status: bool = True
) -> ProcessingElement:
    doc: dict[str, Any] = {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "ProcessingElement",
        "metadata": {"name": f"wc-{pe_id}", "uid": f"uid-{pe_id}"},
        "spec": {"id": pe_id, "regions": [0]},
    }
    if with_status:
        doc["status"] = {"launchCount": launch, "connectivity": connectivity}
    return ProcessingElement.model_validate(doc)


def pod(pe_id: int, phase: str = "Running", launch: int = 1, owner: str | None = None) -> PodObservation:
    return PodObservation(pe_id, launch, owner or f"uid-{pe_id}", phase)


def test_all_full_and_running_is_a_clean_healthy_region() -> None:
    pes = {0: pe(0), 1: pe(1)}
    assert region_health([0, 1], pes, [pod(0), pod(1)]) == Health(True, True)


def test_a_restarted_pe_makes_the_start_unclean() -> None:
    pes = {0: pe(0), 1: pe(1, launch=2)}
    assert region_health([0, 1], pes, [pod(0), pod(1, launch=2)]) == Health(True, False)


def test_partial_connectivity_or_a_pod_not_running_is_unhealthy() -> None:
    pes = {0: pe(0, "Partial"), 1: pe(1)}
    assert region_health([0, 1], pes, [pod(0), pod(1)]) == Health(False, True)
    pes = {0: pe(0), 1: pe(1)}
    assert region_health([0, 1], pes, [pod(0), pod(1, "Pending")]) == Health(False, True)
    # A PE not yet launched is not connected.
    assert region_health([0], {0: pe(0, with_status=False)}, [pod(0)]) == Health(False, True)


def test_only_the_current_launch_of_the_same_pe_object_counts() -> None:
    pes = {0: pe(0, launch=3)}
    # The pod of the previous launch, or of a deleted and recreated PE, is not the PE's pod.
    assert region_health([0], pes, [pod(0, launch=2)]) is None
    assert region_health([0], pes, [pod(0, launch=3, owner="old-uid")]) is None
    assert region_health([0], pes, [pod(0, launch=2), pod(0, launch=3)]) == Health(True, False)


def test_missing_objects_make_health_unknown_unless_something_is_unhealthy() -> None:
    assert region_health([0, 1], {0: pe(0)}, [pod(0)]) is None
    assert region_health([0, 1], {0: pe(0), 1: pe(1)}, [pod(0)]) is None
    assert region_health([0, 1], {0: pe(0, "None")}, [pod(0)]) == Health(False, True)


def test_pes_outside_the_region_are_ignored() -> None:
    pes = {0: pe(0), 5: pe(5, "None")}
    assert region_health([0], pes, [pod(0), pod(5, "Failed")]) == Health(True, True)
