"""Simulated StatefulSet and Deployment controllers: they create and delete pods by replicas.

StatefulSets: pods `<name>-<ordinal>` with hostname/subdomain, OrderedReady (one at a time, each
waiting for the previous to be Ready; scale down from the highest ordinal) or Parallel; failed
pods are replaced; a changed template replaces pods from the highest ordinal once all are Ready.
Deployments: pods `<name>-<template hash>-<suffix>` owned directly by the Deployment (no
ReplicaSets); a changed template replaces old pods once the new ones are Ready. No
PersistentVolumeClaims, no maxSurge/maxUnavailable arithmetic, no minReadySeconds.
"""

from __future__ import annotations

import hashlib
import logging
import random
from typing import Any

import orjson

from streams_k8s.sandbox.clock import now
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.store import WatchEvent, clone
from streams_k8s.sandbox.worker import Worker

log = logging.getLogger(__name__)

PODS = ("", "pods")
STATEFULSETS = ("apps", "statefulsets")
DEPLOYMENTS = ("apps", "deployments")
OwnerKey = tuple[str, str, str]  # (kind, namespace, name)
REVISION = "controller-revision-hash"
TEMPLATE_HASH = "pod-template-hash"


def template_hash(template: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(template, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


def is_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


class WorkloadControllers:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.pods_rt: ResourceType = registry.types[PODS]
        self.kinds = {"StatefulSet": registry.types[STATEFULSETS], "Deployment": registry.types[DEPLOYMENTS]}
        self.worker: Worker[OwnerKey] = Worker("workload-controllers", self._sync)
        registry.store.listeners.append(self._on_event)

    def _on_event(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        if rt.key in (STATEFULSETS, DEPLOYMENTS):
            self.worker.add((event.obj["kind"], meta["namespace"], meta["name"]))
        elif rt.key == PODS:
            for ref in meta.get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") in self.kinds:
                    self.worker.add((ref["kind"], meta["namespace"], ref["name"]))

    def _sync(self, key: OwnerKey) -> None:
        kind, ns, name = key
        owner = self.registry.find(self.kinds[kind], ns, name)
        if owner is None or owner["metadata"].get("deletionTimestamp"):
            return  # the garbage collector removes the pods
        uid = owner["metadata"]["uid"]
        store = self.registry.store
        dependents = (store.lookup_uid(d) for d in list(store.dependents.get(uid, ())))
        pods = [
            p
            for p in dependents
            if p is not None
            and p["kind"] == "Pod"
            and any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or []
            )
        ]
        for pod in pods:
            if pod["status"].get("phase") in ("Failed", "Succeeded") and not pod["metadata"].get(
                "deletionTimestamp"
            ):
                self._delete(pod)  # replaced on the next pass
        pods = [p for p in pods if p["status"].get("phase") not in ("Failed", "Succeeded")]
        if kind == "StatefulSet":
            self._statefulset(owner, pods)
        else:
            self._deployment(owner, pods)

    # -- StatefulSet --------------------------------------------------------------------------

    def _statefulset(self, sts: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        spec = sts["spec"]
        name = sts["metadata"]["name"]
        replicas = int(spec.get("replicas", 1))
        revision = f"{name}-{template_hash(spec['template'])}"
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        by_ordinal = {_ordinal(p, name): p for p in pods}
        live = {
            i: p
            for i, p in by_ordinal.items()
            if i is not None and not p["metadata"].get("deletionTimestamp")
        }
        for i in range(replicas):
            if i in live:
                continue
            if i in by_ordinal:  # still terminating
                if ordered:
                    break
                continue
            if ordered and not all(is_ready(live[j]) for j in range(i) if j in live):
                break
            pod = self._pod_from_template(
                sts,
                f"{name}-{i}",
                {
                    REVISION: revision,
                    "statefulset.kubernetes.io/pod-name": f"{name}-{i}",
                    "apps.kubernetes.io/pod-index": str(i),
                },
            )
            pod["spec"]["hostname"] = f"{name}-{i}"
            if spec.get("serviceName"):
                pod["spec"]["subdomain"] = spec["serviceName"]
            self._create(pod)
            live[i] = pod
            if ordered:
                break
        extra = sorted((i for i in live if i >= replicas), reverse=True)
        terminating = len(by_ordinal) > len(live)
        # OrderedReady removes one pod at a time, each only once the previous one is gone.
        for i in (extra[:1] if not terminating else []) if ordered else extra:
            self._delete(live.pop(i))
        if (
            not extra
            and not terminating
            and len(live) == replicas
            and all(is_ready(p) for p in live.values())
        ):
            outdated = [
                i for i, p in live.items() if p["metadata"].get("labels", {}).get(REVISION) != revision
            ]
            if outdated:
                self._delete(live[max(outdated)])
        current = list(live.values())
        self._status(
            sts,
            {
                "replicas": len(current),
                "readyReplicas": sum(1 for p in current if is_ready(p)),
                "availableReplicas": sum(1 for p in current if is_ready(p)),
                "currentReplicas": sum(
                    1 for p in current if p["metadata"]["labels"].get(REVISION) == revision
                ),
                "updatedReplicas": sum(
                    1 for p in current if p["metadata"]["labels"].get(REVISION) == revision
                ),
                "currentRevision": revision,
                "updateRevision": revision,
                "collisionCount": 0,
            },
        )

    # -- Deployment ---------------------------------------------------------------------------

    def _deployment(self, deploy: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        spec = deploy["spec"]
        name = deploy["metadata"]["name"]
        replicas = int(spec.get("replicas", 1))
        current_hash = template_hash(spec["template"])
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        new = [p for p in live if p["metadata"].get("labels", {}).get(TEMPLATE_HASH) == current_hash]
        old = [p for p in live if p not in new]
        for _ in range(replicas - len(new)):
            suffix = "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
            pod = self._pod_from_template(
                deploy, f"{name}-{current_hash}-{suffix}", {TEMPLATE_HASH: current_hash}
            )
            self._create(pod)
            new.append(pod)
        surplus = sorted(new, key=lambda p: (is_ready(p), p["metadata"]["name"]))[
            : max(0, len(new) - replicas)
        ]
        for pod in surplus:
            self._delete(pod)
        new = [p for p in new if p not in surplus]
        if old and all(is_ready(p) for p in new):
            for pod in old:
                self._delete(pod)
        ready = sum(1 for p in new if is_ready(p))
        available = "True" if ready >= replicas else "False"
        self._status(
            deploy,
            {
                "replicas": len(new) + len(old),
                "updatedReplicas": len(new),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "unavailableReplicas": max(0, replicas - ready),
                "conditions": [
                    {
                        "type": "Available",
                        "status": available,
                        "reason": "MinimumReplicasAvailable"
                        if available == "True"
                        else "MinimumReplicasUnavailable",
                        "message": f"{ready}/{replicas} replicas are ready",
                    }
                ],
            },
        )

    # -- shared -------------------------------------------------------------------------------

    def _pod_from_template(
        self, owner: dict[str, Any], pod_name: str, labels: dict[str, str]
    ) -> dict[str, Any]:
        template = clone(owner["spec"]["template"])
        meta = template.get("metadata") or {}
        meta["name"] = pod_name
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        meta.pop("namespace", None)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec") or {}}

    def _create(self, pod: dict[str, Any]) -> None:
        ref = pod["metadata"]["ownerReferences"][0]
        owner = self.registry.store.lookup_uid(ref["uid"])
        ns = owner["metadata"]["namespace"] if owner else ""
        try:
            self.registry.create(self.pods_rt, "v1", ns, pod)
        except ApiError as err:
            if err.code == 422:  # a template the API server accepts can still make invalid pods
                log.warning(
                    "create Pod %s in %s %s failed: %s",
                    pod["metadata"]["name"],
                    ref["kind"],
                    ref["name"],
                    err,
                )
                return
            if err.code not in (403, 404, 409):
                raise

    def _delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if "namespace" not in meta:
            return  # never stored
        try:
            self.registry.delete(
                self.pods_rt, meta["namespace"], meta["name"], {"preconditions": {"uid": meta["uid"]}}
            )
        except ApiError as err:
            if err.code not in (404, 409):
                raise

    def _status(self, owner: dict[str, Any], status: dict[str, Any]) -> None:
        meta = owner["metadata"]
        status["observedGeneration"] = meta.get("generation", 1)
        if all(owner.get("status", {}).get(k) == v for k, v in status.items() if k != "conditions") and (
            "conditions" not in status
            or [(c["type"], c["status"]) for c in owner.get("status", {}).get("conditions") or []]
            == [(c["type"], c["status"]) for c in status["conditions"]]
        ):
            return
        for condition in status.get("conditions") or []:
            condition["lastUpdateTime"] = condition["lastTransitionTime"] = now()
        new = {**owner, "status": {**(owner.get("status") or {}), **status}}
        rt = self.kinds[owner["kind"]]
        try:
            self.registry.update(rt, "v1", meta["namespace"], meta["name"], new, "status")
        except ApiError as err:
            if err.code not in (404, 409):
                raise


def _ordinal(pod: dict[str, Any], name: str) -> int | None:
    suffix = pod["metadata"]["name"].removeprefix(f"{name}-")
    return int(suffix) if suffix.isdigit() else None
