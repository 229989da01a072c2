"""The PE pod and resource shares: the runtime contract (env, mounts, probe, ports, security)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from streams_k8s.api import Job, ProcessingElement
from streams_k8s.api.base import ResourceRequirements
from streams_k8s.api.processing_element import BuildType, TraceLevel
from streams_k8s.api.quantity import divide_quantity
from streams_k8s.controller.children.pod import PeRuntimeSettings, build_pod, pod_name, pod_template_hash
from streams_k8s.controller.children.resources import divide_resources
from streams_k8s.controller.placement.constraints import PodPlacement


def make_job(**spec: Any) -> Job:
    return Job.from_wire(
        {
            "kind": "Job",
            "metadata": {"name": "apps", "namespace": "streams", "uid": "job-uid"},
            "spec": {"bundle": {"name": "apps.parallel.Parallel.sab"}, **spec},
        }
    )


def make_pe(**spec: Any) -> ProcessingElement:
    return ProcessingElement.from_wire(
        {
            "kind": "ProcessingElement",
            "metadata": {
                "name": "apps-2",
                "namespace": "streams",
                "uid": "pe-uid",
                "annotations": {
                    "streams.ibm.com/applicationName": "apps.parallel::Parallel",
                    "streams.ibm.com/applicationScope": "Default",
                },
            },
            "spec": {
                "id": 2,
                "contentId": "ab" * 32,
                "sabName": "apps.parallel.Parallel.sab",
                "inputPorts": 2,
                **spec,
            },
        }
    )


def pod(job: Job | None = None, pe: ProcessingElement | None = None, **kwargs: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "job": job or make_job(),
        "pe": pe or make_pe(),
        "generation": 0,
        "launch_count": 1,
        "placement": PodPlacement(),
        "settings": PeRuntimeSettings(),
        **kwargs,
    }
    return build_pod(**arguments)


def env_of(manifest: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in manifest["spec"]["containers"][0]["env"]}


def mounts_of(manifest: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in manifest["spec"]["containers"][0]["volumeMounts"]}


def test_runtime_environment() -> None:
    assert env_of(pod()) == {
        "STREAMS_DOMAIN_ID": "kubernetes",
        "STREAMS_INITIAL_TRACE_LEVEL": "INFO",
        "STREAMS_INSTALL": "/usr/local/streams",
        "STREAMS_INSTANCE_ID": "streams",
        "STREAMS_JOB_NAME": "apps",
        "STREAMS_NS": "K8S:",
        "STREAMS_PE_ID": "2",
        "STREAMS_PE_LAUNCH_COUNT": "1",
        "STREAMS_PE_NAME": "apps-2",
        "STREAMS_PE_USE_VALGRIND": "false",
        "STREAMS_SAB_NAME": "apps.parallel.Parallel.sab",
        "STREAMS_TRANSPORT_SECURITY_TYPE": "none",
    }


def test_pod_shape_security_probe_and_ports() -> None:
    manifest = pod()
    spec = manifest["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["securityContext"] == {
        "runAsUser": 2098,
        "runAsGroup": 2015,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["automountServiceAccountToken"] is False
    assert spec["dnsConfig"] == {"options": [{"name": "single-request-reopen"}]}
    container = spec["containers"][0]
    assert container["name"] == "pe"
    assert container["image"] == "docker.io/openstreams/streams-runtime:6.release"
    assert container["args"] == ["/usr/local/streams/system/impl/bin/streams-k8s-bootstrap"]
    assert container["livenessProbe"] == {
        "exec": {"command": ["cat", "/tmp/live"]},
        "initialDelaySeconds": 30,
        "periodSeconds": 10,
        "failureThreshold": 1,
    }
    assert [(p["name"], p["containerPort"], p["protocol"]) for p in container["ports"]] == [
        ("sys-0", 10000, "TCP"),
        ("sys-1", 10001, "TCP"),
        ("sys-metrics", 9696, "TCP"),
        ("sys-notify", 10000, "UDP"),
        ("sys-cr-notify", 10001, "UDP"),
    ]
    # kube-apiserver's IsValidPortName: an IANA service name of at most 15 characters.
    iana = re.compile(r"^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$")
    assert all(iana.match(p["name"]) for p in container["ports"])
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert mounts_of(manifest) == {
        "pe-config-volume": "/etc/config/pe",
        "job-config-volume": "/etc/config/job",
    }
    assert {v["name"]: v["configMap"]["name"] for v in spec["volumes"]} == {
        "pe-config-volume": "apps-2",
        "job-config-volume": "apps",
    }


def test_metadata_labels_annotations_and_owner() -> None:
    pe = make_pe(regions=[0])
    metadata = pod(pe=pe, generation=3, launch_count=4)["metadata"]
    assert metadata["labels"] == {
        "app": "streams",
        "svc": "pe",
        "streams.ibm.com/job": "apps",
        "streams.ibm.com/generation": "3",
        "streams.ibm.com/pe": "2",
        "streams.ibm.com/launch-count": "4",
        "streams.ibm.com/cr": "true",
    }
    assert metadata["annotations"] == {
        "streams.ibm.com/applicationName": "apps.parallel::Parallel",
        "streams.ibm.com/applicationScope": "Default",
        "streams.ibm.com/contentId": "ab" * 32,
        "streams.ibm.com/podTemplate": pod_template_hash(pe.spec),
    }
    assert metadata["ownerReferences"] == [
        {
            "apiVersion": "streams.ibm.com/v1",
            "kind": "ProcessingElement",
            "name": "apps-2",
            "uid": "pe-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_pod_names_are_deterministic_per_launch() -> None:
    name = pod_name("apps", 2, "pe-uid", 1)
    assert name.startswith("apps-2-")
    assert len(name) == len("apps-2-") + 5
    assert name == pod_name("apps", 2, "pe-uid", 1)
    assert name != pod_name("apps", 2, "pe-uid", 2)
    assert name != pod_name("apps", 2, "other-uid", 1)
    assert pod()["metadata"]["name"] == name


def test_valgrind_forces_debug_image_and_capabilities() -> None:
    container = pod(pe=make_pe(runWithValgrind=True, buildType="release"))["spec"]["containers"][0]
    assert container["image"].endswith("streams-runtime:6.debug")
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_PTRACE"]},  # never SYS_ADMIN
    }
    assert env_of({"spec": {"containers": [container]}})["STREAMS_PE_USE_VALGRIND"] == "true"
    ptrace = pod(pe=make_pe(allowPtrace=True))["spec"]["containers"][0]
    assert ptrace["securityContext"]["capabilities"]["add"] == ["SYS_PTRACE"]
    assert ptrace["image"].endswith(":6.release")


def test_explicit_image_and_settings() -> None:
    settings = PeRuntimeSettings(registry="icr.io", image_namespace="streams", build_type=BuildType.DEBUG)
    assert (
        pod(settings=settings)["spec"]["containers"][0]["image"] == "icr.io/streams/streams-runtime:6.debug"
    )
    assert pod(pe=make_pe(image="my/pe:1"))["spec"]["containers"][0]["image"] == "my/pe:1"


def test_pull_policy_and_secret_inherit_from_the_job() -> None:
    job = make_job(imagePullPolicy="Never", imagePullSecret="regcred")
    inherited = pod(job=job)
    assert inherited["spec"]["containers"][0]["imagePullPolicy"] == "Never"
    assert inherited["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    own = pod(job=job, pe=make_pe(imagePullPolicy="Always", imagePullSecret="mine"))
    assert own["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert own["spec"]["imagePullSecrets"] == [{"name": "mine"}]
    assert "imagePullSecrets" not in pod()["spec"]


def test_trace_levels() -> None:
    env = env_of(pod(pe=make_pe(appTraceLevel="DEBUG", runtimeTraceLevel="ERROR")))
    assert (env["STREAMS_APP_TRACE_LEVEL"], env["STREAMS_INITIAL_TRACE_LEVEL"]) == ("DEBUG", "ERROR")


def test_data_volume_claim_wins_over_paths() -> None:
    manifest = pod(pe=make_pe(dataVolumeClaim={"name": "data", "subPath": "x"}, dataPath="/host"))
    volume = next(v for v in manifest["spec"]["volumes"] if v["name"] == "data-volume")
    assert volume == {"name": "data-volume", "persistentVolumeClaim": {"claimName": "data"}}
    assert {"name": "data-volume", "mountPath": "/data", "subPath": "x"} in manifest["spec"]["containers"][0][
        "volumeMounts"
    ]
    host = pod(pe=make_pe(dataPath="/host"))
    assert {"name": "data-volume", "hostPath": {"path": "/host", "type": ""}} in host["spec"]["volumes"]
    fallback = pod(settings=PeRuntimeSettings(data_path="/srv"))
    assert {"name": "data-volume", "hostPath": {"path": "/srv", "type": ""}} in fallback["spec"]["volumes"]


def test_file_system_checkpoints() -> None:
    manifest = pod(pe=make_pe(checkpointRepository={"fileSystem": {"volumeClaim": {"name": "ckpt"}}}))
    env = env_of(manifest)
    assert env["STREAMS_CHECKPOINT_REPOSITORY"] == "fileSystem"
    assert env["STREAMS_CHECKPOINT_REPOSITORY_CONFIGURATION"] == '{ "Dir" : "/checkpoint" }'
    assert mounts_of(manifest)["checkpoint-volume"] == "/checkpoint"
    assert {"name": "checkpoint-volume", "persistentVolumeClaim": {"claimName": "ckpt"}} in manifest["spec"][
        "volumes"
    ]
    host = pod(pe=make_pe(checkpointRepository={"fileSystem": {}}))
    assert {"name": "checkpoint-volume", "hostPath": {"path": "/checkpoint", "type": ""}} in host["spec"][
        "volumes"
    ]


def test_redis_checkpoints_use_the_validated_config() -> None:
    config = (
        '{"replicas":1,"shards":1,"replicaGroups":[{"servers":["10.0.0.9:6379"],"description":"redis#0"}]}'
    )
    pe = make_pe(checkpointRepository={"redis": {"service": "redis", "replicaCount": 1, "shardCount": 1}})
    env = env_of(pod(pe=pe, redis_config=config))
    assert (env["STREAMS_CHECKPOINT_REPOSITORY"], env["STREAMS_CHECKPOINT_REPOSITORY_CONFIGURATION"]) == (
        "redis",
        config,
    )
    assert "STREAMS_CHECKPOINT_REPOSITORY" not in env_of(pod(pe=pe))


def test_property_secrets_are_mounted() -> None:
    manifest = pod(pe=make_pe(appPropertiesSecret="app-props", restrictedPropertiesSecret="secret-props"))
    mounts = mounts_of(manifest)
    assert mounts["app-properties-secret-volume"] == "/etc/config/app"
    assert mounts["restricted-properties-secret-volume"] == "/etc/config/restricted"
    assert {"name": "app-properties-secret-volume", "secret": {"secretName": "app-props"}} in manifest[
        "spec"
    ]["volumes"]


def test_placement_is_carried_into_the_pod() -> None:
    placement = PodPlacement(
        node_name="node-a",
        labels={"streams.ibm.com/hostcolocation.X": "together"},
        affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
        tolerations=[{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
    )
    manifest = pod(placement=placement)
    assert manifest["spec"]["nodeName"] == "node-a"
    assert manifest["spec"]["affinity"] == placement.affinity
    assert manifest["spec"]["tolerations"] == placement.tolerations
    assert manifest["metadata"]["labels"]["streams.ibm.com/hostcolocation.X"] == "together"


@pytest.mark.parametrize(
    ("quantity", "parts", "share"),
    [("16", 4, "4"), ("64Gi", 4, "16Gi"), ("100m", 3, "33.333m"), (2, 3, "0.666"), ("0.5", 2, "0.25")],
)
def test_quantities_divide_keeping_units(quantity: str | int, parts: int, share: str) -> None:
    assert divide_quantity(quantity, parts) == share


def test_job_resources_are_shared_among_pes() -> None:
    job_resources = ResourceRequirements(limits={"cpu": "16", "memory": "64Gi"}, requests={"cpu": "4"})
    share = divide_resources(job_resources, 4)
    assert share.limits == {"cpu": "4", "memory": "16Gi"}
    assert share.requests == {"cpu": "1"}
    with pytest.raises(ValueError, match="leaves nothing for each"):
        divide_quantity("1m", 2000)


def test_the_pod_template_hash_follows_pod_settings_not_restart_policies_or_code() -> None:
    """An edit of a setting the pod is made of replaces the pod; restart policies steer only the
    controller, and the code has its own content id."""
    base = make_pe()
    same = pod_template_hash(base.spec)
    for change in ({"restart_failed_pod": True}, {"delete_failed_pod": False}, {"content_id": "cd" * 32}):
        assert pod_template_hash(base.spec.model_copy(update=change)) == same, change
    for change in ({"runtime_trace_level": TraceLevel.TRACE}, {"allow_ptrace": True}, {"data_path": "/d"}):
        assert pod_template_hash(base.spec.model_copy(update=change)) != same, change
