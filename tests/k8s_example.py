"""A tiny controller built on the runtime, used end to end by the tests (in process and through
`streams-k8s run --controller tests.k8s_example:setup`).

For every ConfigMap labelled ``example=echo`` it keeps a child ConfigMap ``<name>-echo`` (owned by
the parent) holding the same data and an annotation naming the replica that wrote it, and records
an Event on the parent.
"""

from __future__ import annotations

from streams_k8s.k8s.client import Resource
from streams_k8s.k8s.controller import Controller, Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey, meta

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
WRITER = "example.streams.ibm.com/written-by"


def setup(manager: Manager) -> Controller:
    parents = manager.informer(CONFIGMAPS, label_selector="example=echo")
    children = manager.informer(CONFIGMAPS, label_selector="example=echo-child")
    recorder = manager.event_recorder("echo-controller")
    client = manager.client
    identity = manager.settings.identity

    async def reconcile(key: ObjectKey) -> Requeue | None:
        parent = parents.store.get(key)
        if parent is None or meta(parent).get("deletionTimestamp"):
            return None  # the API server's GC removes the child
        child_key = ObjectKey(key.namespace, f"{key.name}-echo")
        child = children.store.get(child_key)
        data = parent.get("data") or {}
        if child is not None and child.get("data") == data:
            return None
        desired = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": child_key.name,
                "namespace": key.namespace,
                "labels": {"example": "echo-child"},
                "annotations": {WRITER: identity},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": key.name,
                        "uid": meta(parent)["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "data": data,
        }
        try:
            await client.create(CONFIGMAPS, desired)
        except ApiError as exc:
            if not exc.already_exists:
                raise
            patch = {"metadata": {"annotations": {WRITER: identity}}, "data": data}
            await client.patch(CONFIGMAPS, child_key.name, patch, key.namespace)
        await recorder.record(parent, "Normal", "Echoed", f"copied {len(data)} keys to {child_key.name}")
        return None

    controller = manager.controller("echo", reconcile, workers=2)
    controller.watch(parents).owns(children, "ConfigMap", "v1")
    return controller
