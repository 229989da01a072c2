"""The coordinator objects of each job with consistent regions, rendered from its ConsistentRegionOperator.

The job controller creates the ConsistentRegionOperator (CRO) with the operator's coordinator
mode in ``spec.mode``; this controller turns each CRO into what that mode needs, with the
builders of `streams_k8s.consistent.manifests` (every object is owned by the CRO, itself owned
by the Job, so deleting the job collects them):

- ``dedicated``: the coordinator Deployment ``<job>-consistent-region-operator``, its headless
  API Service ``streams-<job>-consistentregion-api`` (selecting the coordinator pod) and the
  NetworkPolicy admitting only the job's PE pods and the instance operator;
- ``shared``: the selector-less API Service only. The pool pod running the job publishes itself
  as its Endpoints; the pool (StatefulSet) and its NetworkPolicy are deployment-level objects
  (``deploy/coordinator-pool``), and a per-job policy would select no pod.

Creation is idempotent (deterministic names, AlreadyExists is success) and a deleted object is
recreated. The NetworkPolicy is watched too: deleted, it is recreated; edited (its spec no longer
the rendered one), it is put back. The coordinators' ServiceAccount and RBAC belong to the
namespace setup (``deploy/coordinator-rbac.yaml``). A cluster that does not serve NetworkPolicy
(found at start) gets the Deployment and Service anyway, with a Warning Event on the CRO saying
the API is unguarded.

Settings: `STREAMS_K8S_COORDINATOR_MODE` and `STREAMS_K8S_COORDINATOR_IMAGE` (`controller.settings`).

The coordinator is the same program as the operator (`streams-k8s coordinator`), so by default it
runs from the image the operator runs from: the image of the operator's own pod (`POD_NAME`,
`POD_NAMESPACE` from the downward API; its `controller` container), which follows whatever an
overlay sets (kustomize `images:`). Outside a pod it is `streams-k8s:<version>`, the tag
deploy/Dockerfile's build documents.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from streams_k8s.api.consistent_region import ConsistentRegionOperator, CoordinatorMode
from streams_k8s.api.contract import APP_LABEL, APP_VALUE, GENERATION_LABEL, SVC_LABEL
from streams_k8s.consistent.manifests import (
    COORDINATOR_SVC,
    coordinator_deployment,
    coordinator_network_policy,
    coordinator_service,
)
from streams_k8s.controller.children.limits import OBJECT_REFUSED, REFUSED
from streams_k8s.controller.kinds import CONSISTENT_REGION_OPERATORS
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import Requeue, owner_mapper
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import DEPLOYMENTS, NETWORK_POLICIES, SERVICES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey, meta

log = logging.getLogger(__name__)

NETWORK_POLICY_UNAVAILABLE = "NetworkPolicyUnavailable"
NETWORK_POLICY_RESTORED = "NetworkPolicyRestored"


@dataclass(frozen=True, slots=True)
class CoordinatorObjectSettings:
    """What the coordinators of new jobs run in (`controller.settings` reads them)."""

    mode: CoordinatorMode = CoordinatorMode.DEDICATED
    image: str = ""


def coordinator_objects(
    operator: ConsistentRegionOperator, *, namespace: str, image: str
) -> list[tuple[Resource, dict[str, Any]]]:
    """What the CRO's mode needs, in creation order (pure function of the CRO)."""
    generation = int((operator.metadata.labels or {}).get(GENERATION_LABEL) or 0)
    service = (SERVICES, coordinator_service(operator, namespace=namespace, generation=generation))
    if operator.spec.mode is CoordinatorMode.SHARED:
        return [service]
    return [
        (NETWORK_POLICIES, coordinator_network_policy(operator, namespace=namespace, generation=generation)),
        service,
        (
            DEPLOYMENTS,
            coordinator_deployment(operator, namespace=namespace, generation=generation, image=image),
        ),
    ]


async def network_policies_served(client: KubeClient) -> bool:
    """Whether the API server serves ``networking.k8s.io/v1`` (asked once, at start)."""
    group_version = f"/apis/{NETWORK_POLICIES.group}/{NETWORK_POLICIES.version}"
    try:
        found = await client.request("GET", NETWORK_POLICIES, group_version, verb="get")
    except ApiError as err:
        if err.not_found:
            return False
        raise
    return any(r.get("name") == NETWORK_POLICIES.plural for r in found.get("resources") or ())


class CoordinatorObjectsController:
    def __init__(
        self, manager: Manager, settings: CoordinatorObjectSettings, *, network_policies: bool = True
    ) -> None:
        """``network_policies``: the cluster serves them (``network_policies_served``)."""
        self.client = manager.client
        self.settings = settings
        self.cros = manager.informer(CONSISTENT_REGION_OPERATORS)
        self.deployments = manager.informer(DEPLOYMENTS, label_selector=f"{SVC_LABEL}={COORDINATOR_SVC}")
        self.services = manager.informer(SERVICES, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.recorder = manager.event_recorder("streams-coordinator-objects")
        self._cached = {DEPLOYMENTS: self.deployments, SERVICES: self.services}
        self._network_policy_served = network_policies
        controller = manager.controller("coordinator-objects", self.reconcile, workers=2)
        controller.watch(self.cros)
        owned = owner_mapper(ConsistentRegionOperator.kind_name)
        controller.watch(self.deployments, owned)
        controller.watch(self.services, owned)
        if network_policies:
            policies = manager.informer(NETWORK_POLICIES, label_selector=f"{SVC_LABEL}={COORDINATOR_SVC}")
            self._cached[NETWORK_POLICIES] = policies
            controller.watch(policies, owned)

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        obj = self.cros.store.get(key)
        if obj is None or meta(obj).get("deletionTimestamp"):
            return None  # owner references collect what it owned
        try:
            operator = ConsistentRegionOperator.from_wire(obj)
        except ValidationError as err:
            log.warning("ConsistentRegionOperator %s is malformed: %s", key, err)
            return None
        for resource, body in coordinator_objects(
            operator, namespace=key.namespace, image=self.settings.image
        ):
            informer = self._cached.get(resource)
            name = str(body["metadata"]["name"])
            live = informer.store.get(ObjectKey(key.namespace, name)) if informer is not None else None
            if live is not None:
                if resource == NETWORK_POLICIES and live.get("spec") != body["spec"]:
                    await self._restore(obj, live, body)
                continue
            if resource == NETWORK_POLICIES and not self._network_policy_served:
                await self._network_policy_unavailable(obj)
                continue
            try:
                await self.client.create_if_absent(resource, body)
            except ApiError as err:
                if resource == NETWORK_POLICIES and err.not_found:
                    self._network_policy_served = False
                    await self._network_policy_unavailable(obj)
                    continue
                if err.status in REFUSED:  # refused again on every retry: say so once per change
                    note = f"the API server refused {resource.kind} {name}: {err.status} {err.message}"
                    await self.recorder.record(obj, "Warning", OBJECT_REFUSED, note)
                    continue
                raise
        return None

    async def _restore(self, cro: dict[str, Any], live: dict[str, Any], wanted: dict[str, Any]) -> None:
        """Put back an edited NetworkPolicy (conditional on the version seen: a conflict retries
        from the cache)."""
        m = meta(live)
        log.warning("NetworkPolicy %s/%s was edited: restoring it", m.get("namespace"), m.get("name"))
        restored = {**wanted, "metadata": {**wanted["metadata"], "resourceVersion": m.get("resourceVersion")}}
        await self.client.replace(NETWORK_POLICIES, restored)
        await self.recorder.record(
            cro,
            "Warning",
            NETWORK_POLICY_RESTORED,
            f"NetworkPolicy {m.get('name')} was edited; its rules are put back (they admit only the job's "
            "PE pods and the instance operator to the coordinator's API)",
        )

    async def _network_policy_unavailable(self, obj: dict[str, Any]) -> None:
        # Repeats aggregate into one Event series per CRO (the recorder's job).
        await self.recorder.record(
            obj,
            "Warning",
            NETWORK_POLICY_UNAVAILABLE,
            "the cluster does not serve networking.k8s.io/v1 NetworkPolicy: the coordinator's API is "
            "open to the cluster network",
        )
