"""Shared mode: the EndpointSlice that points a job's selector-less API Service at the pool pod
that runs the job, so its PEs reach it (named as the Service, owned by the job's
ConsistentRegionOperator, so it goes with it)."""

from __future__ import annotations

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    COORDINATOR_API_PORT_NAME,
    JOB_LABEL,
    METRICS_PORT_NAME,
    coordinator_service_name,
)
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import ENDPOINT_SLICES
from streams_k8s.k8s.objects import Object, ObjectKey, meta

# A selector-less Service's EndpointSlice names its Service and the controller that manages it
# (never the built-in EndpointSlice controller, which would take it over).
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "consistent-region-coordinator.streams.ibm.com"


def job_endpoint_slice(
    job: ObjectKey,
    operator: Object,
    *,
    pod_name: str,
    pod_namespace: str | None,
    pod_ip: str,
    api_port: int,
    metrics_port: int,
) -> Object:
    """The EndpointSlice of ``job``'s API Service listing the pod ``pod_name`` at ``pod_ip``."""
    name = coordinator_service_name(job.name)
    owner = {
        "apiVersion": operator.get("apiVersion", "streams.ibm.com/v1"),
        "kind": "ConsistentRegionOperator",
        "name": meta(operator)["name"],
        "uid": meta(operator).get("uid"),
    }
    target = {"kind": "Pod", "name": pod_name, "namespace": pod_namespace}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": {
                APP_LABEL: APP_VALUE,
                JOB_LABEL: job.name,
                SERVICE_NAME_LABEL: name,
                MANAGED_BY_LABEL: MANAGED_BY,
            },
            "ownerReferences": [owner],
        },
        "addressType": "IPv6" if ":" in pod_ip else "IPv4",
        "endpoints": [{"addresses": [pod_ip], "conditions": {"ready": True}, "targetRef": target}],
        "ports": [
            {"name": COORDINATOR_API_PORT_NAME, "port": api_port, "protocol": "TCP"},
            {"name": METRICS_PORT_NAME, "port": metrics_port, "protocol": "TCP"},
        ],
    }


async def publish(client: KubeClient, endpoint_slice: Object) -> None:
    """Create the EndpointSlice, or replace the one there."""
    name, namespace = str(meta(endpoint_slice)["name"]), str(meta(endpoint_slice)["namespace"])
    try:
        current = await client.get(ENDPOINT_SLICES, name, namespace)
    except ApiError as err:
        if err.status != 404:
            raise
        await client.create(ENDPOINT_SLICES, endpoint_slice, namespace)
        return
    endpoint_slice["metadata"]["resourceVersion"] = meta(current).get("resourceVersion")
    await client.replace(ENDPOINT_SLICES, endpoint_slice, namespace)
