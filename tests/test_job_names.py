"""Job names: the limit follows from the longest name the operator makes of one, the model and the
CRD refuse one character more, and Jobs of the longest name run, with and without consistent regions."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from api_documents import invalid_job
from operator_support import condition, drop_job_name_rules, job_manifest, operator, wait_for_phase
from streams_k8s.api import Job
from streams_k8s.api.contract import JOB_LABEL, coordinator_name, coordinator_service_name, pe_service_name
from streams_k8s.api.job import MAX_JOB_NAME
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.children.names import consistent_region_name, pe_port_name
from streams_k8s.controller.children.pod import pod_name
from streams_k8s.controller.kinds import (
    CONSISTENT_REGION_OPERATORS,
    CONSISTENT_REGIONS,
    EXPORTS,
    HOSTPOOLS,
    IMPORTS,
    JOBS,
    PARALLEL_REGIONS,
    PES,
)
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, DEPLOYMENTS, NETWORK_POLICIES, PODS, SERVICES
from streams_k8s.sandbox import Sandbox
from test_api_crds import crd_rejections

# Kubernetes' name rules (apimachinery validation): Services are DNS-1035 labels, most other
# objects DNS-1123 subdomains; label values are at most 63 characters.
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_1123_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
# Larger than any plan makes: PE ids count PEs (a width is at most 1,000 channels); a PE port's
# TCP port is 10000 + its id, so ids stay below 55536; region and pool indexes count ADL entries.
LARGEST_PE, LARGEST_PORT, LARGEST_INDEX = 10**7, 55_535, 10**4
LONGEST = "j" * MAX_JOB_NAME


def test_the_limit_is_set_by_the_coordinator_service_of_the_runtime_contract() -> None:
    assert MAX_JOB_NAME == 34
    assert coordinator_service_name(LONGEST) == f"streams-{LONGEST}-consistentregion-api"
    assert len(coordinator_service_name(LONGEST)) == 63


def test_every_child_name_of_the_longest_job_fits_its_kind() -> None:
    services = [coordinator_service_name(LONGEST), pe_service_name(LONGEST, LARGEST_PE)]
    objects = [
        LONGEST,  # the name-table ConfigMap
        pod_name(LONGEST, LARGEST_PE, "uid", 10**6),
        pe_port_name(LONGEST, LARGEST_PE, LARGEST_PORT),
        f"{LONGEST}-{LARGEST_INDEX}",  # HostPool, ParallelRegion
        coordinator_name(LONGEST),  # ConsistentRegionOperator, Deployment, NetworkPolicy
        consistent_region_name(LONGEST, LARGEST_INDEX),
    ]
    label_values = [LONGEST, str(LARGEST_PE), consistent_region_name(LONGEST, LARGEST_INDEX)]
    assert [s for s in services if not DNS_1035_LABEL.match(s)] == []
    assert [o for o in objects if not DNS_1123_SUBDOMAIN.match(o)] == []
    assert [v for v in label_values if not LABEL_VALUE.match(v)] == []
    # The coordinator's Deployment and its pods' host names stay within one DNS label too.
    assert len(coordinator_name(LONGEST)) <= 63


def test_the_model_and_the_crd_refuse_one_character_more() -> None:
    for name in (LONGEST, "a-b-1"):
        document = {**invalid_job({}), "metadata": {"name": name}}
        assert Job.from_wire(document).metadata.name == name
        assert crd_rejections(Job, document) == []
    too_long = {**invalid_job({}), "metadata": {"name": LONGEST + "j"}}
    with pytest.raises(
        ValidationError, match=f"has {MAX_JOB_NAME + 1} characters: a Job's name has at most 34"
    ):
        Job.from_wire(too_long)
    assert crd_rejections(Job, too_long) == [
        "metadata.name: a Job's name has at most 34 characters, so that its coordinator Service "
        "streams-<job>-consistentregion-api fits in 63"
    ]
    for bad in ("Upper", "9lives", "dotted.name", "dash-"):
        document = {**invalid_job({}), "metadata": {"name": bad}}
        with pytest.raises(ValidationError, match="DNS-1035 label"):
            Job.from_wire(document)
        assert [r for r in crd_rejections(Job, document) if "DNS-1035 label" in r]


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


async def made_by(client: KubeClient, job: str) -> list[dict[str, Any]]:
    found = []
    for resource in (
        CONFIGMAPS,
        SERVICES,
        PODS,
        PES,
        HOSTPOOLS,
        PARALLEL_REGIONS,
        EXPORTS,
        IMPORTS,
        CONSISTENT_REGION_OPERATORS,
        CONSISTENT_REGIONS,
        DEPLOYMENTS,
        NETWORK_POLICIES,
    ):
        found += (await client.list_all(resource, "default", label_selector=f"{JOB_LABEL}={job}"))[0]
    return found


@pytest.mark.sandbox(nodes=2)
async def test_jobs_of_the_longest_name_run_with_and_without_consistent_regions(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, regions = "plain-".ljust(MAX_JOB_NAME, "p"), "regions-".ljust(MAX_JOB_NAME, "r")
    simple = write_sab(tmp_path / "simple.sab", SyntheticSpec(chains=2, length=2, regions=1, width=2))
    consistent = write_sab(
        tmp_path / "consistent.sab", SyntheticSpec(chains=2, length=2, consistent_chains=1)
    )
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest(plain, simple, fusion={"legacy": True}))
        await client.create(JOBS, job_manifest(regions, consistent, fusion={"manual": 2}))
        for job in (plain, regions):
            await wait_for_phase(client, job, "Running")
        coordinator = await client.get(SERVICES, coordinator_service_name(regions), "default")
        assert len(coordinator["metadata"]["name"]) == 63
        await client.get(DEPLOYMENTS, coordinator_name(regions), "default")
        for job in (plain, regions):
            for obj in await made_by(client, job):
                name = obj["metadata"]["name"]
                rule = DNS_1035_LABEL if obj["kind"] == "Service" else DNS_1123_SUBDOMAIN
                assert rule.match(name), f"{obj['kind']} {name}"
                bad_values = [
                    v for v in (obj["metadata"].get("labels") or {}).values() if not LABEL_VALUE.match(v)
                ]
                assert bad_values == [], f"{obj['kind']} {name}"
        # One character more: the API server refuses the Job (the CRD's rule), nothing is made.
        with pytest.raises(ApiError) as refused:
            await client.create(JOBS, job_manifest(plain + "x", simple))
        assert refused.value.status == 422
        assert "at most 34 characters" in refused.value.message


@pytest.mark.sandbox(nodes=1)
async def test_a_job_made_before_the_crd_rule_fails_with_invalid_name(
    sandbox: Sandbox, client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await drop_job_name_rules(client)
    bundle = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=1, length=2, consistent_chains=1))
    name = "older-".ljust(MAX_JOB_NAME + 1, "o")  # ran forever on 422s before this limit
    async with operator(sandbox, monkeypatch, tmp_path / "cache"):
        await client.create(JOBS, job_manifest(name, bundle))
        status = await wait_for_phase(client, name, "Failed")
        valid = condition(status, "Valid")
        assert (valid["status"], valid["reason"]) == ("False", "InvalidName")
        assert f"has {MAX_JOB_NAME + 1} characters" in valid["message"]
        assert await made_by(client, name) == []
