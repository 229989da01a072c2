"""Submission without a cluster: spec validation and the children a plan becomes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from streams_k8s.api.contract import (
    APP_LABEL,
    CR_LABEL,
    GENERATION_LABEL,
    JOB_LABEL,
    PE_LABEL,
    SVC_LABEL,
)
from streams_k8s.api.processing_element import ProcessingElementSpec
from streams_k8s.app.adl import parse_adl
from streams_k8s.app.synthetic import SyntheticSpec, synthetic_adl
from streams_k8s.controller.children.creation_order import creation_waits
from streams_k8s.controller.children.desired import Desired, Rendered, desired_objects
from streams_k8s.controller.children.transport_secret import secret_transport
from streams_k8s.controller.kinds import CONSISTENT_REGIONS, PES
from streams_k8s.controller.planning import JobFailure, plan_job, validate_job
from streams_k8s.k8s.kinds import CONFIGMAPS, SECRETS, SERVICES

UID = "0f7e2b0c-1111-2222-3333-444455556666"


def manifest(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": "unit", "namespace": "ns", "uid": UID},
        "spec": {"bundle": {"name": "app.sab"}, **spec},
    }


def children(app_spec: SyntheticSpec, **spec: Any) -> list[Desired]:
    job = validate_job(manifest(**spec))
    app = parse_adl(synthetic_adl(app_spec))
    plan = plan_job(job, app, job_id=3, nodes=3)
    transport = ("CERT", "KEY") if "processingElement" in spec else None
    return desired_objects(
        job, UID, plan, generation=0, stamp="Sat Nov 21 10:00:00 UTC 2026", transport=transport
    )


def pe_specs(objects: list[Desired]) -> list[ProcessingElementSpec]:
    return [ProcessingElementSpec.model_validate(o.body["spec"]) for o in objects if o.resource == PES]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"fusion": {"manual": 0}}, "spec.fusion.manual"),
        ({"fusion": {"manual": 2, "legacy": True}}, "spec.fusion"),
        ({"bundle": {"name": "../evil.sab"}}, "spec.bundle.name"),
        ({"submissionTimeOutInSeconds": -1}, "spec.submissionTimeOutInSeconds"),
        ({"unknownField": 1}, "spec.unknownField"),
    ],
)
def test_an_invalid_spec_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(JobFailure) as failure:
        validate_job(manifest(**spec))
    assert failure.value.condition == "Valid"
    assert failure.value.reason == "InvalidSpec"
    assert failure.value.message.startswith(field)


def test_children_come_in_creation_order_with_the_pes_last() -> None:
    objects = children(SyntheticSpec(chains=2, length=2, consistent_chains=1), fusion={"manual": 3})
    kinds = [o.body["kind"] for o in objects]
    assert kinds[0] == "ConfigMap"
    assert kinds.index("ProcessingElement") > max(i for i, k in enumerate(kinds) if k != "ProcessingElement")
    names = [(o.resource, o.name) for o in objects]
    assert len(names) == len(set(names))
    for obj in objects:
        assert obj.body["metadata"]["ownerReferences"][0]["uid"] == UID
        assert obj.body["metadata"]["namespace"] == "ns"
    region = next(o for o in objects if o.resource == CONSISTENT_REGIONS)
    assert region.name == "unit-cr0"
    assert region.body["metadata"]["labels"][CR_LABEL] == "unit-cr0"
    in_region = set(region.body["spec"]["pesInRegion"])
    for obj in (o for o in objects if o.resource == PES):
        pe = obj.body["spec"]["id"]
        assert obj.body["metadata"]["labels"][CR_LABEL] == ("true" if pe in in_region else "false")


def test_job_resources_are_divided_among_the_pes() -> None:
    objects = children(
        SyntheticSpec(chains=4, length=1),
        fusion={"manual": 4},
        resources={"limits": {"cpu": "16", "memory": "64Gi"}, "requests": {"cpu": "2"}},
    )
    for spec in pe_specs(objects):
        assert spec.resources.limits == {"cpu": "4", "memory": "16Gi"}
        assert spec.resources.requests == {"cpu": "0.5"}


def test_pe_settings_inherit_from_the_job() -> None:
    objects = children(
        SyntheticSpec(chains=2, length=1),
        fusion={"manual": 2},
        imagePullPolicy="Always",
        imagePullSecret="registry",
        processingElement={"transportSecurityType": "TLSv1.2", "restartCompletedPod": True},
    )
    for spec in pe_specs(objects):
        assert spec.image_pull_policy is not None
        assert spec.image_pull_policy.value == "Always"
        assert spec.image_pull_secret == "registry"
        assert spec.restart_failed_pod is True  # unset: the SPL restartable flag
        assert spec.restart_completed_pod is True
        assert spec.resources.requests == {"cpu": "100m", "memory": "128Mi"}
    table = next(o for o in objects if o.resource == CONFIGMAPS and o.name == "unit")
    assert set(table.body["data"]) == {"operator_port_labels.properties"}  # no transport pair
    assert table.body["data"]["operator_port_labels.properties"].startswith("#Operator port labels\n")
    (secret,) = (o for o in objects if o.resource == SECRETS)
    assert secret.name == "unit-transport"
    assert secret.body["metadata"]["ownerReferences"][0]["controller"] is True
    assert secret_transport(secret.body) == ("CERT", "KEY")
    assert objects.index(secret) < min(i for i, o in enumerate(objects) if o.resource == PES)


def test_explicit_restart_failed_pod_wins() -> None:
    objects = children(SyntheticSpec(chains=1, length=1), processingElement={"restartFailedPod": False})
    assert all(spec.restart_failed_pod is False for spec in pe_specs(objects))


def test_services_carry_one_port_per_pe_input_port() -> None:
    objects = children(SyntheticSpec(chains=2, length=2), fusion={"legacy": True})
    for service in (o for o in objects if o.resource == SERVICES):
        ports = service.body["spec"]["ports"]
        system = [p for p in ports if p["name"].startswith("sys-") and p["name"][4:].isdigit()]
        assert [p["port"] for p in system] == [10000 + i for i in range(len(system))]
        assert service.body["spec"]["selector"] == {  # the PE's pods, whatever their generation
            APP_LABEL: "streams",
            JOB_LABEL: "unit",
            SVC_LABEL: "pe",
            PE_LABEL: service.body["metadata"]["labels"][PE_LABEL],
        }


def test_each_pe_service_has_one_port_per_input_port_of_its_pe() -> None:
    job = validate_job(manifest(fusion={"manual": 2}))
    plan = plan_job(job, parse_adl(synthetic_adl(SyntheticSpec(chains=3, length=2))), job_id=3, nodes=3)
    objects = desired_objects(job, UID, plan, generation=0, stamp="Sat Nov 21 10:00:00 UTC 2026")
    services = {o.name: o.body["spec"]["ports"] for o in objects if o.resource == SERVICES}
    pes = {o.name: o.body["spec"] for o in objects if o.resource == PES}
    assert sorted(len(pe.inputs) for pe in plan.pes) == [0, 3]  # a PE with several input ports
    for planned in plan.pes:
        name = f"unit-{planned.id}"
        inputs = [p for p in services[name] if p["name"].startswith("sys-") and p["name"][4:].isdigit()]
        assert len(inputs) == len(planned.inputs) == pes[name]["inputPorts"]
        assert [(p["name"], p["port"]) for p in inputs] == [
            (f"sys-{port.id}", 10000 + port.id) for port in planned.inputs
        ]


def test_an_edit_takes_the_children_of_the_pes_it_leaves_as_they_run() -> None:
    """Rendered against the plan that runs, an edit's children are what a fresh render gives (but
    the generation label of the PEs it leaves: nothing rewrites them); those PEs' children are the
    running ones, and an edit of the PE template leaves none."""
    stamp = "Sat Nov 21 10:00:00 UTC 2026"
    app = SyntheticSpec(chains=3, length=2)
    job = validate_job(manifest(fusion={"manual": 6}))
    plan = plan_job(job, parse_adl(synthetic_adl(app)), job_id=3, nodes=3)
    running = desired_objects(job, UID, plan, generation=1, stamp=stamp)
    earlier = Rendered(job.spec, plan, running)
    rebuilt = parse_adl(synthetic_adl(replace(app, rebuilt=frozenset({1}))))  # a new build of one operator
    ids = {pe.id: pe.operators for pe in plan.pes}
    new_plan = plan_job(job, rebuilt, job_id=3, nodes=3, ids_from=ids)
    content = {pe.id: pe.content_id for pe in plan.pes}
    changed = {pe.id for pe in new_plan.pes if content.get(pe.id) != pe.content_id}
    assert 0 < len(changed) < len(plan.pes)

    fresh = desired_objects(job, UID, new_plan, generation=2, stamp=stamp)
    edited = desired_objects(job, UID, new_plan, generation=2, stamp=stamp, earlier=earlier)
    assert [(c.resource, c.name) for c in edited] == [(c.resource, c.name) for c in fresh]
    by_name = {(c.resource, c.name): c for c in running}
    for child, rendered in zip(edited, fresh, strict=True):
        pe = child.body["metadata"]["labels"].get(PE_LABEL)
        if child.resource in (CONFIGMAPS, SERVICES, PES) and pe is not None and int(pe) not in changed:
            assert child is by_name[(child.resource, child.name)]
            assert child.body["metadata"]["labels"][GENERATION_LABEL] == "1"
            labels = {**child.body["metadata"]["labels"], GENERATION_LABEL: "2"}
            assert {**child.body, "metadata": {**child.body["metadata"], "labels": labels}} == rendered.body
        else:
            assert child.body == rendered.body

    traced = validate_job(manifest(fusion={"manual": 6}, processingElement={"runtimeTraceLevel": "DEBUG"}))
    retraced = desired_objects(traced, UID, plan, generation=2, stamp=stamp, earlier=earlier)
    assert not {id(c) for c in retraced} & {id(c) for c in running}


def test_a_pe_is_created_after_its_own_config_map_and_service_and_the_jobs_shared_children() -> None:
    objects = children(SyntheticSpec(chains=2, length=1, pools=1), fusion={"manual": 2})
    waits = [
        {(objects[w].resource.plural, objects[w].name) for w in after} for after in creation_waits(objects)
    ]
    shared = {(o.resource.plural, o.name) for o in objects if PE_LABEL not in o.body["metadata"]["labels"]}
    assert ("configmaps", "unit") in shared
    assert ("streamshostpools", "unit-0") in shared
    for child, after in zip(objects, waits, strict=True):
        if child.resource == PES:  # its own ConfigMap and Service, the shared ones, nothing else
            assert after == shared | {("configmaps", child.name), ("services", child.name)}
        elif PE_LABEL in child.body["metadata"]["labels"]:
            assert after == set()  # a PE's ConfigMap and Service need nothing
        else:  # the shared ones keep their kinds' order
            assert all(kind != child.resource.plural for kind, _ in after)
