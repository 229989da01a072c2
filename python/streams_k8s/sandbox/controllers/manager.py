"""What a cluster's kube-scheduler and kube-controller-manager do, for the embedded server only
(a real cluster runs its own): the scheduler, the StatefulSet and Deployment controllers, the
Endpoints and EndpointSlice controllers, the pod garbage collector, the taint eviction controller
and the service account controller, each a worker reacting to the registry's changes in-process.
The garbage collector and the namespace controller run with the API server itself (`gc`)."""

from __future__ import annotations

from typing import Any

from streams_k8s.sandbox.controllers.endpoints import (
    EndpointsController,
    EndpointSliceController,
    ServicePods,
)
from streams_k8s.sandbox.controllers.pod_gc import PodGarbageCollector
from streams_k8s.sandbox.controllers.scheduler import Scheduler
from streams_k8s.sandbox.controllers.service_accounts import ServiceAccountController
from streams_k8s.sandbox.controllers.taint_eviction import TaintEvictionController
from streams_k8s.sandbox.controllers.workloads import WorkloadControllers
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.worker import Worker


class ControllerManager:
    def __init__(self, registry: Registry) -> None:
        self.scheduler = Scheduler(registry)
        self.workloads = WorkloadControllers(registry)
        service_pods = ServicePods(registry)
        self.endpoints = EndpointsController(registry, service_pods)
        self.endpoint_slices = EndpointSliceController(registry, service_pods)
        self.pod_gc = PodGarbageCollector(registry)
        self.taint_eviction = TaintEvictionController(registry)
        self.service_accounts = ServiceAccountController(registry)

    @property
    def workers(self) -> list[Worker[Any]]:
        return [
            self.scheduler.worker,
            self.workloads.worker,
            self.endpoints.worker,
            self.endpoint_slices.worker,
            self.pod_gc.worker,
            self.taint_eviction.worker,
            self.service_accounts.worker,
        ]
