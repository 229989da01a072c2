"""The PE controller: each ProcessingElement gets its pod, restarted by the PE's policies.

Keyed by PE. Reads the caches of PEs, Jobs, HostPools, PE ConfigMaps, pods and nodes; decides
with ``pes.lifecycle.decide``; acts (create, replace, relabel, status) and stops. Every write is
idempotent (deterministic pod names, 409 on create is success, status patches are conditional on
the resourceVersion they were decided on, a relaunch on the launch count), so a killed controller
resumes where it left off.

Contract with the job controller (which creates PEs, their ConfigMaps and host pools):
- PE ``<job>-<peId>`` labelled ``streams.ibm.com/job`` and ``streams.ibm.com/generation``, owned by
  the Job; its pods are created here, owned by the PE.
- PE ConfigMap ``<job>-<peId>`` labelled ``app=streams``, annotated ``streams.ibm.com/contentId``
  with the PE's content id, key ``aadl.xml``; HostPool ``<job>-<poolIndex>``.
- PE status: ``launchCount``, ``podName``, ``nodeName``, ``phase`` are written here;
  ``connectivity`` by the REST API, which also records a pod that has just started running
  (``pes.lifecycle.started_status``); the controller waits for that report (``pes.report_wait``).
- A PE deleted while its Job lives is recreated by the job controller; its launch count is
  continued here (`pes.launch_counts`: kept on the PE ConfigMap once the deletion is seen).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from streams_k8s.api.contract import (
    AADL_KEY,
    APP_LABEL,
    APP_VALUE,
    CONTENT_ID_ANNOTATION,
    GENERATION_LABEL,
    JOB_LABEL,
    SVC_LABEL,
    SVC_ZOMBIE,
    pe_service_name,
)
from streams_k8s.api.host_pool import HostPool
from streams_k8s.api.job import Job
from streams_k8s.api.processing_element import Connectivity, ProcessingElement
from streams_k8s.controller.children.pod import PeRuntimeSettings, build_pod, pod_name
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.controller.pes.degraded import stopped_note
from streams_k8s.controller.pes.disruption import disruption, node_disruption
from streams_k8s.controller.pes.expected_pods import ExpectedPods
from streams_k8s.controller.pes.launch_counts import LaunchCounts
from streams_k8s.controller.pes.lifecycle import (
    DELETED,
    PENDING,
    Action,
    Decision,
    decide,
    pod_launch,
    status_fields,
)
from streams_k8s.controller.pes.pods_by_owner import PodsByOwner
from streams_k8s.controller.pes.report_wait import REPORT_GRACE, ReportWait
from streams_k8s.controller.placement.constraints import (
    PlacedPe,
    PlacementError,
    PodPlacement,
    plan_placement,
)
from streams_k8s.controller.placement.node_infos import NodeInfos
from streams_k8s.controller.placement.nodes import unprepared_nodes
from streams_k8s.k8s.controller import Requeue, stop_if_deleted, stop_if_owner_deleted
from streams_k8s.k8s.errors import ApiError, unless_gone
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.kinds import CONFIGMAPS, NODES, PODS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, meta, object_key

log = logging.getLogger(__name__)

REDIS_CONFIG_ANNOTATION = "redisConfig"
# Waiting on nodes being labelled/tainted for a pool: they carry no owner to map events back.
NODE_WAIT = 0.5


class PeController:
    def __init__(
        self,
        manager: Manager,
        settings: PeRuntimeSettings | None = None,
        *,
        workers: int = 8,
        report_grace: float = REPORT_GRACE,
    ) -> None:
        self.settings = settings or PeRuntimeSettings()
        self.report_wait = ReportWait(report_grace)  # for a started pod's connectivity report
        # The version each PE's last status write was made on: a cache still showing it has not
        # seen the write yet (its watch event reconciles the PE again), and a decision on it would
        # act on the old status: a pod a kubelet takes a while to finish (status written, then
        # deleted), recorded Deleted, was otherwise created again on the next event of its pod.
        self._written_on: dict[ObjectKey, str] = {}
        # A 429 ends the reconcile and brings the PE back after its Retry-After: a worker never
        # sleeps a second out holding one PE while a hundred others wait for their pods.
        self.client = manager.client.deferring_throttled()
        self.pes = manager.informer(PES)
        self.jobs = manager.informer(JOBS)
        self.hostpools = manager.informer(HOSTPOOLS)
        self.configmaps = manager.informer(CONFIGMAPS, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.pods = manager.informer(PODS, label_selector=f"{APP_LABEL}={APP_VALUE}")
        self.nodes = manager.informer(NODES)
        self.node_infos = NodeInfos(self.nodes)
        self.pods_by_owner = PodsByOwner(self.pods)
        self.expected = ExpectedPods()
        self.pods.add_handler(self.expected.observe)
        self.events: EventRecorder = manager.event_recorder("pe-controller")
        self.launch_counts = LaunchCounts(self.client, self.configmaps, self.pods_by_owner, self.report_wait)
        self._jobs_parsed: dict[ObjectKey, tuple[str, Job]] = {}  # by key, dropped when the Job goes
        # Launches whose pod the cluster took (by PE uid): (launch, why), from the pod's last state.
        self._taken: dict[str, tuple[int, str]] = {}
        self.pes.add_handler(self._on_pe_event)
        self.jobs.add_handler(self._on_job_event)
        self.pods.add_handler(self._on_pod_event)
        self.pes.store.index_label(JOB_LABEL)

        self.controller = manager.controller("pes", self.reconcile, workers=workers)
        self.controller.watch(self.pes)
        self.controller.owns(self.pods, ProcessingElement.kind_name)
        self.controller.watch(self.configmaps)  # a PE ConfigMap has the PE's name
        self.controller.watch(self.hostpools, self._pes_of_job)
        self.controller.watch(self.jobs, self._pes_of_job, predicates=[_job_came_or_goes])

    # --- mapping ---------------------------------------------------------------------------

    def _pes_of_job(self, obj: Object) -> list[ObjectKey]:
        m = meta(obj)
        job = m.get("labels", {}).get(JOB_LABEL) if obj.get("kind") != Job.kind_name else m.get("name")
        if not job:
            return []
        return [
            object_key(pe) for pe in self.pes.store.select_by_labels({JOB_LABEL: job}, m.get("namespace"))
        ]

    def _on_pe_event(self, kind: str, old: Object | None, new: Object | None) -> None:
        if kind == "delete" and old is not None:
            self._taken.pop(str(meta(old).get("uid")), None)
            self.launch_counts.deleted(old)

    def _on_pod_event(self, kind: str, old: Object | None, new: Object | None) -> None:
        """Remember why the cluster took a PE pod, while the deleted pod can still say it."""
        pod = old if kind == "delete" else new
        if pod is None or (kind != "delete" and not meta(pod).get("deletionTimestamp")):
            return
        owner = next(
            (r.get("uid") for r in meta(pod).get("ownerReferences") or () if r.get("controller")), None
        )
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.store.get(ObjectKey("", node_name)) if node_name else None

        if owner and (why := disruption(pod, node_name, node)) is not None:
            self._taken[str(owner)] = (pod_launch(pod), why)

    def _disrupted(self, pe: ProcessingElement) -> str | None:
        """Why the cluster took the pod of the PE's current launch, if it did (`pes.disruption`)."""
        launch = pe.status.launch_count if pe.status is not None else 0
        taken = self._taken.get(str(pe.metadata.uid))
        if taken is not None:
            if taken[0] >= launch:  # the current launch (its run perhaps not recorded yet)
                return taken[1]
            del self._taken[str(pe.metadata.uid)]  # an earlier launch's: done with
        node_name = pe.status.node_name if pe.status is not None else None
        node = self.nodes.store.get(ObjectKey("", node_name)) if node_name else None
        return node_disruption(node_name, node, [])

    def _on_job_event(self, kind: str, old: Object | None, new: Object | None) -> None:
        if kind == "delete" and old is not None:
            self._jobs_parsed.pop(object_key(old), None)

    def retained(self) -> dict[str, int]:
        """Entries kept per Job or PE, by cache (none once every Job and its PEs are gone)."""
        return {
            "parsed-jobs": len(self._jobs_parsed),
            "started-pods": len(self.report_wait),
            "taken-pods": len(self._taken),
            "deleted-launch-counts": len(self.launch_counts),
            **self.pods_by_owner.retained(),
            **self.expected.retained(),
        }

    # --- reconcile -------------------------------------------------------------------------

    async def reconcile(self, key: ObjectKey) -> Requeue | None:
        obj = self.pes.store.get(key)
        if obj is None:
            self._written_on.pop(key, None)
            self.report_wait.forget(key)
            self.expected.forget(key)
            await self.launch_counts.keep(key)
            return None
        pe = ProcessingElement.from_wire(obj)
        if self._written_on.get(key) == pe.metadata.resource_version:
            return None  # our status write is not in the cache yet: its event brings the PE back
        self._written_on.pop(key, None)
        if pe.status is not None and pe.status.connectivity is not Connectivity.NONE:
            self.report_wait.reported(key, str(pe.metadata.uid))
        if pe.status is not None and pe.status.launch_count > 0:
            self.launch_counts.launched(key)
        if pe.metadata.deletion_timestamp is not None:
            return None  # its pods go with it (owner references)
        job_name = pe.metadata.labels.get(JOB_LABEL)
        job_obj = self.jobs.store.get(ObjectKey(key.namespace, job_name)) if job_name else None
        if job_obj is None or meta(job_obj).get("deletionTimestamp"):
            return None
        job = self._job(job_obj)
        pods = self.expected.without_deleted(self.pods_by_owner.live_pe_pods(str(pe.metadata.uid)))
        placement, waiting_for = self._prerequisites(key, job, pe)
        for _ in range(3):  # a relaunch is written first, then acted on with the new status
            decision = decide(
                pe,
                pods,
                previous_launches=self.launch_counts.previous(key, str(pe.metadata.uid)),
                ready=not waiting_for,
                waiting_for=waiting_for,
                ran_unrecorded=self.report_wait.ran_unrecorded(key, str(pe.metadata.uid)),
                disrupted=self._disrupted(pe),
            )
            if decision.action is not Action.CREATE or placement is None:
                await self._retire(decision)  # a creation retires the old pods alongside (below)
            if decision.action is Action.RELAUNCH:
                pod = self._pod_name(job, pe, decision.launch)
                # The new launch has not connected yet: a consistent region sees the PE restart.
                fields = {"launchCount": decision.launch, "phase": PENDING, "nodeName": None, "podName": pod}
                # The Event alongside the write-ahead, not before it: a replacement is two round
                # trips (this, then the old pod's deletion with the new pod's creation), not three.
                note = f"{decision.reason}: launch {decision.launch}"
                _, pe = await asyncio.gather(
                    self.events.record(obj, "Normal", "Relaunching", note, "Relaunch"),
                    self._write_ahead(pe, {**fields, "connectivity": Connectivity.NONE.value}),
                )
                # The old launch's pod stays: the next decision retires it as it creates the new one.
                retired = {meta(p).get("uid") for p, _ in decision.retire}
                pods = [p for p in pods if meta(p).get("uid") not in retired]
                continue
            if decision.started:
                wait = self.report_wait.remaining(key, str(pe.metadata.uid), decision.launch)
                if wait > 0:
                    return Requeue(after=wait)
            else:
                self.report_wait.recorded(key, by_report=True)
            if decision.action is Action.CREATE and placement is not None:
                uid = str(pe.metadata.uid)
                if (pending := self.expected.creation_pending(key, uid, decision.launch)) > 0:
                    await self._retire(decision)
                    return Requeue(after=pending)  # created already; its event re-runs this PE sooner
                # The old launch's pod goes as the new one is made (their names differ by launch).
                await asyncio.gather(
                    self._retire(decision), self._create_pod(job, pe, decision.launch, placement)
                )
            elif decision.action is Action.RECORD:
                if decision.phase == DELETED:  # the Event first: a restart in between records it still
                    await self._warn_stopped(job_obj, pe, decision.launch)
                await self._write_status(pe, status_fields(decision))
                if decision.started:  # only once written: a failed write retries without a new wait
                    self.report_wait.recorded(key, by_report=False)
            elif decision.action is Action.WAIT and waiting_for == "nodes":
                return Requeue(after=NODE_WAIT)
            return None
        return None

    async def _warn_stopped(self, job: Object, pe: ProcessingElement, launch: int) -> None:
        """A Warning on the Job: this PE stays stopped after its pod's deletion, and how to start it."""
        note = stopped_note(pe)
        await self.events.record_once(job, "Warning", "PodDeleted", note, f"{pe.metadata.uid}/{launch}")

    def _job(self, obj: Object) -> Job:
        key, version = object_key(obj), f"{meta(obj).get('uid')}/{meta(obj).get('resourceVersion')}"
        cached = self._jobs_parsed.get(key)
        if cached is None or cached[0] != version:
            cached = (version, Job.from_wire(obj))
            self._jobs_parsed[key] = cached
        return cached[1]

    @staticmethod
    def _pod_name(job: Job, pe: ProcessingElement, launch: int) -> str:
        return pod_name(str(job.metadata.name), pe.spec.id, str(pe.metadata.uid), launch)

    def _prerequisites(
        self, key: ObjectKey, job: Job, pe: ProcessingElement
    ) -> tuple[PodPlacement | None, str]:
        """The pod's placement once its ConfigMap (with the PE's content) is there, or what is
        still missing ("" when nothing is)."""
        namespace, job_name = key.namespace, str(job.metadata.name)
        cm = self.configmaps.store.get(ObjectKey(namespace, pe_service_name(job_name, pe.spec.id)))
        if cm is None:
            return None, "ConfigMap"
        content = meta(cm).get("annotations", {}).get(CONTENT_ID_ANNOTATION)
        if AADL_KEY not in (cm.get("data") or {}) or (pe.spec.content_id and content != pe.spec.content_id):
            return None, "ConfigMap"

        location = pe.spec.placement.host_pool_location
        pools = []
        if location is not None:
            pool = self.hostpools.store.get(ObjectKey(namespace, f"{job_name}-{location.pool_index}"))
            if pool is None:
                return None, "HostPool"
            pools.append(HostPool.from_wire(pool).spec)
        nodes = self.node_infos.all()
        try:
            plan = plan_placement(
                namespace=namespace,
                job=job_name,
                pools=pools,
                pes=[PlacedPe(pe.spec.id, pe.spec.placement)],
                nodes=nodes,
            )
        except PlacementError as err:
            log.info("PE %s: placement: %s", key, err)
            return None, "placement"
        if unprepared_nodes(plan, nodes):
            return None, "nodes"
        return plan.pods[pe.spec.id], ""

    async def _create_pod(
        self, job: Job, pe: ProcessingElement, launch: int, placement: PodPlacement
    ) -> None:
        pod = build_pod(
            job=job,
            pe=pe,
            generation=int(pe.metadata.labels.get(GENERATION_LABEL, "0") or 0),
            launch_count=launch,
            placement=placement,
            settings=self.settings,
            redis_config=job.metadata.annotations.get(REDIS_CONFIG_ANNOTATION),
        )
        # Job or PE deleted while this reconcile ran: no pod for a job that is going away.
        stop_if_deleted(
            self.jobs.store, ObjectKey(str(job.metadata.namespace), str(job.metadata.name)), job.metadata.uid
        )
        stop_if_owner_deleted(self.pes.store, pod)
        key = ObjectKey(str(pe.metadata.namespace), str(pe.metadata.name))
        self.expected.creating(key, str(pe.metadata.uid), launch)
        try:
            await self.client.create_if_absent(PODS, pod)
        except BaseException:
            self.expected.forget(key)
            raise

    async def _retire(self, decision: Decision) -> None:
        for pod, zombie in decision.retire:
            m = meta(pod)
            if zombie:
                patch = {"metadata": {"labels": {SVC_LABEL: SVC_ZOMBIE}}}
                await unless_gone(self.client.patch(PODS, m["name"], patch, m["namespace"]))
            else:
                self.expected.deleting(pod)  # before the request: its event may come before the answer
                call, deleted = self.client.delete(PODS, m["name"], m["namespace"], uid=m.get("uid")), False
                try:
                    deleted = await unless_gone(call)
                finally:
                    if not deleted:  # no deletion of ours to wait for
                        self.expected.delete_failed(pod)

    async def _write_status(
        self, pe: ProcessingElement, fields: dict[str, Any], held: dict[str, Any] | None = None
    ) -> ProcessingElement:
        """Patch the PE status, conditional on the version the decision was made on, or on the
        ``held`` status fields alone (`KubeClient.patch_status_if`)."""
        name, ns, version = str(pe.metadata.name), pe.metadata.namespace, pe.metadata.resource_version
        written = await self.client.patch_status_if(
            PES, name, ns, fields, held=held or {}, resource_version=version
        )
        if (written.get("metadata") or {}).get("resourceVersion") != version:
            self._written_on[ObjectKey(ns or "", name)] = str(version)  # a change: its event comes
        return ProcessingElement.from_wire(written)

    async def _write_ahead(self, pe: ProcessingElement, fields: dict[str, Any]) -> ProcessingElement:
        """A relaunch written ahead on the condition that the launch decided on is still the one
        recorded: connectivity reports change the PE's version all through an upgrade, and 409s
        on it held a quarter of the relaunches back seconds on a real cluster."""
        launch = pe.status.launch_count if pe.status is not None else 0
        try:  # nothing recorded (launch 0): on the version
            return await self._write_status(pe, fields, {"launchCount": launch} if launch else None)
        except ApiError as err:  # a failed test is a bare 422 Invalid, as a refused value is
            name, ns = str(pe.metadata.name), pe.metadata.namespace
            held = await self.client.get(PES, name, ns) if err.status == 422 else {}
            if (held.get("status") or {}).get("launchCount", launch) == launch:
                raise
            raise ApiError(409, "Conflict", f"PE {name}: launch {launch} was replaced") from err


def _job_came_or_goes(old: Object | None, new: Object | None) -> bool:
    """A Job's arrival (its PEs may have waited for it) or deletion wakes its PEs; its edits do not:
    they reach a PE through its own spec, which the job controller patches (`jobs.rollout`), and
    waking every PE of a 1,000-PE job on each edit cost its upgrade seconds of reconciles."""
    if old is None or new is None:
        return True
    return bool(meta(new).get("deletionTimestamp")) and not meta(old).get("deletionTimestamp")


def setup(manager: Manager, settings: PeRuntimeSettings | None = None) -> PeController:
    """Register the PE controller (``--controller streams_k8s.controller.pes.controller:setup``)."""
    return PeController(manager, settings)
