"""The cached nodes as placement sees them (`NodeInfo`), each parsed once per version.

The PE controller places every PE against every node: parsing 125 nodes on each of the ~20,000
PE reconciles of a 10,000-PE submission made its cost per PE grow with the cluster.
"""

from __future__ import annotations

from streams_k8s.controller.placement.constraints import NodeInfo
from streams_k8s.k8s.informer import EventType, Informer
from streams_k8s.k8s.objects import Object, meta, resource_version


class NodeInfos:
    def __init__(self, nodes: Informer) -> None:
        self._nodes = nodes
        self._parsed: dict[str, tuple[str, NodeInfo]] = {}  # by node name: (resourceVersion, info)
        nodes.add_handler(self._forget_deleted)

    def all(self) -> list[NodeInfo]:
        """Every cached node."""
        infos = []
        for node in self._nodes.store.select():
            name, version = str(meta(node).get("name")), resource_version(node)
            parsed = self._parsed.get(name)
            if parsed is None or parsed[0] != version:
                parsed = (version, NodeInfo.from_wire(node))
                self._parsed[name] = parsed
            infos.append(parsed[1])
        return infos

    def _forget_deleted(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        if kind == "delete" and old is not None:
            self._parsed.pop(str(meta(old).get("name")), None)
