"""Kubernetes plumbing shared by every controller: client, informers, workqueue, leader election,
events, conditions, health and metrics, and the Manager that wires them. Imports nothing of ours."""

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
