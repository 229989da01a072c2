"""Kubernetes plumbing shared by every controller: client, informers, workqueue, leader election,
events, conditions, health and metrics, and the Manager that wires them. Imports nothing of ours.

A controller in a few lines (run it with ``streams-k8s run --controller module:setup``)::

    PODS = Resource("", "v1", "pods", "Pod")
    JOBS = Resource("streams.ibm.com", "v1", "streamsjobs", "Job")

    def setup(manager: Manager) -> None:
        jobs = manager.informer(JOBS)
        pods = manager.informer(PODS, label_selector="app=streams")

        async def reconcile(key: ObjectKey) -> Requeue | None:
            job = jobs.store.get(key)          # read the cache, never the event
            if job is None:
                return None                    # deleted: owner references clean up
            ...                                # converge; raise to retry with backoff
            return Requeue(after=60)           # or None when done

        manager.controller("jobs", reconcile, workers=4).watch(
            jobs, predicates=[generation_changed]
        ).owns(pods, "Job")
"""

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import Controller, Requeue, generation_changed, owner_mapper
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.leader import LeaderElector
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import Object, ObjectKey, object_key
from streams_k8s.k8s.settings import RuntimeSettings
from streams_k8s.k8s.workqueue import WorkQueue

__all__ = [
    "ApiError",
    "Controller",
    "EventRecorder",
    "Informer",
    "KubeClient",
    "LeaderElector",
    "Manager",
    "Object",
    "ObjectKey",
    "Requeue",
    "Resource",
    "RuntimeSettings",
    "WorkQueue",
    "generation_changed",
    "object_key",
    "owner_mapper",
]
