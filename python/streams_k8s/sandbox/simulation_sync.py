"""When the simulated cluster has caught up with the embedded server: what `Sandbox.settle` waits
for besides the embedded controllers. The server knows what it sent each of the simulation's
watches (`Watcher.sent_rv`); the simulation's informers say what they have applied."""

from __future__ import annotations

from streams_k8s.sandbox.authn import SIMULATION
from streams_k8s.sandbox.cluster.simulation import Simulation
from streams_k8s.sandbox.registry import Registry


def caught_up(simulation: Simulation | None, registry: Registry) -> bool:
    """Each of the simulation's caches is filled and watching, and has applied the last change
    its watch was sent; its queues are empty and no write of its is in flight."""
    if simulation is None or not simulation.workers:
        return True  # not simulating, or not started
    if not simulation.idle:
        return False
    sent: dict[tuple[str, str], int] = {}
    for coll in registry.store.collections.values():
        for watcher in coll.watchers:
            if watcher.user == SIMULATION:
                key = (watcher.rt.group, watcher.rt.plural)
                sent[key] = max(sent.get(key, 0), watcher.sent_rv)
    for resource, informer in simulation.informers.items():
        reached = sent.get((resource.group, resource.plural))
        if reached is None or int(informer.resource_version or 0) < reached:
            return False
    return True
