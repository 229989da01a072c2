"""What the job controller reads of the cluster: its informers' caches, and the questions every
collaborator asks of them (is this Job still cached, which children does it own, which PEs does
it run). The collaborators read these; only the informers write them.
"""

from __future__ import annotations

from collections.abc import Iterable

from streams_k8s.api.contract import (
    APP_LABEL,
    APP_VALUE,
    JOB_LABEL,
    PE_LABEL,
)
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
from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS, SERVICES
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta


def pe_ids(pes: Iterable[Object], uid: str) -> dict[int, list[str]]:
    """The operators of each PE of the Job ``uid`` by PE id, from its PE objects (what keeps PE
    ids across a re-plan; `plan --against stj/NAME` reads them the same way)."""
    return {
        int(pe["spec"]["id"]): list(pe["spec"]["operators"])
        for pe in pes
        if any(ref.get("uid") == uid for ref in meta(pe).get("ownerReferences") or ())
    }


def job_of(obj: Object) -> list[ObjectKey]:
    """The Job a child or pod belongs to (its job label), for the controller's watches."""
    job = (meta(obj).get("labels") or {}).get(JOB_LABEL)
    return [ObjectKey(meta(obj).get("namespace") or "", job)] if job else []


class JobCaches:
    """The informers of Jobs, their children, their pods and the nodes (see the module docs)."""

    def __init__(self, manager: Manager) -> None:
        self.jobs = manager.informer(JOBS)
        self.pes = manager.informer(PES)
        self.hostpools = manager.informer(HOSTPOOLS)
        self.configmaps = manager.informer(CONFIGMAPS, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.services = manager.informer(SERVICES, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.pods = manager.informer(PODS, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.parallel_regions = manager.informer(PARALLEL_REGIONS)
        self.consistent_regions = manager.informer(CONSISTENT_REGIONS)
        self.cros = manager.informer(CONSISTENT_REGION_OPERATORS)
        self.exports = manager.informer(EXPORTS)
        self.imports = manager.informer(IMPORTS)
        self.nodes = manager.informer(NODES)
        self.children: dict[Resource, Informer] = {
            CONFIGMAPS: self.configmaps,
            SERVICES: self.services,
            HOSTPOOLS: self.hostpools,
            EXPORTS: self.exports,
            IMPORTS: self.imports,
            PARALLEL_REGIONS: self.parallel_regions,
            CONSISTENT_REGION_OPERATORS: self.cros,
            CONSISTENT_REGIONS: self.consistent_regions,
            PES: self.pes,
        }
        for informer in (*self.children.values(), self.pods):  # "the X of job J" on every reconcile
            informer.store.index_label(JOB_LABEL)
        self.pods.store.index_label(PE_LABEL)  # "the pod of PE N", for each PE of a rolling edit

    def holds(self, obj: Object) -> bool:
        """The cache still holds this Job (the same incarnation): what is kept for it will be dropped."""
        m = meta(obj)
        current = self.jobs.store.get(ObjectKey(str(m.get("namespace")), str(m.get("name"))))
        return current is not None and meta(current).get("uid") == m.get("uid")

    def labelled(self, informer: Informer, obj: Object) -> list[Object]:
        """The objects of ``informer`` labelled with the Job ``obj``'s name, in its namespace."""
        m = meta(obj)
        return informer.store.select_by_labels({JOB_LABEL: str(m.get("name"))}, str(m.get("namespace")))

    def owned(self, obj: Object, uid: str) -> list[Object]:
        """Every cached child of the Job ``obj`` that names ``uid`` as its owner."""
        return [
            child
            for informer in self.children.values()
            for child in self.labelled(informer, obj)
            if any(ref.get("uid") == uid for ref in meta(child).get("ownerReferences") or ())
        ]

    def live_ids(self, namespace: str, job: str, uid: str) -> dict[int, list[str]]:
        """The operators of each PE the job runs, by PE id: a plan made again (after a restart)
        keeps the ids that earlier edits gave them, which a fresh plan need not."""
        return pe_ids(self.pes.store.select_by_labels({JOB_LABEL: job}, namespace), uid)
