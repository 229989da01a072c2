"""What a submitted job left in the cluster, and the checks that it is exactly right."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams_k8s.api.contract import JOB_LABEL, LAUNCH_COUNT_LABEL, PE_LABEL, SVC_LABEL
from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.controller.kinds import HOSTPOOLS, JOBS, PES
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SERVICES
from streams_k8s.k8s.objects import Object

NS = "default"


def synthetic_job(
    name: str, directory: Path, pes: int, *, chains: int | None = None, rebuilt: frozenset[int] = frozenset()
) -> Object:
    """A Job of a generated pipeline with at least ``pes`` operators, fused into ``pes`` PEs;
    ``rebuilt``: operator indexes whose code is a new build (`SyntheticSpec.rebuilt`)."""
    chains = chains or max(1, min(100, pes // 10))
    length = max(1, -(-pes // chains))
    spec = SyntheticSpec(name=f"{name}::App", chains=chains, length=length, rebuilt=rebuilt)
    sab = write_sab(directory / f"{name}.sab", spec)
    return {
        "apiVersion": "streams.ibm.com/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"bundle": {"name": sab.name, "file": {"path": str(sab)}}, "fusion": {"manual": pes}},
    }


@dataclass
class Inventory:
    job: Object
    pes: list[Object]
    pods: list[Object]
    zombies: list[Object]
    config_maps: list[Object]
    services: list[Object]
    host_pools: list[Object]

    @classmethod
    async def read(cls, client: KubeClient, job: str) -> Inventory:
        selector = f"{JOB_LABEL}={job}"

        async def items(resource: Any, extra: str = "") -> list[Object]:
            found, _ = await client.list_all(resource, NS, label_selector=selector + extra)
            return [o for o in found if not o["metadata"].get("deletionTimestamp")]

        pods = await items(PODS)
        return cls(
            job=await client.get(JOBS, job, NS),
            pes=await items(PES),
            pods=[p for p in pods if p["metadata"]["labels"].get(SVC_LABEL) == "pe"],
            zombies=[p for p in pods if p["metadata"]["labels"].get(SVC_LABEL) != "pe"],
            config_maps=await items(CONFIGMAPS),
            services=await items(SERVICES),
            host_pools=await items(HOSTPOOLS),
        )

    def problems(self, pes: int) -> list[str]:
        """Everything that differs from exactly ``pes`` running PEs with one pod each."""
        found: list[str] = []
        job_uid = self.job["metadata"]["uid"]
        name = self.job["metadata"]["name"]
        ids = Counter(int(pe["spec"]["id"]) for pe in self.pes)
        if sorted(ids) != list(range(pes)) or any(n > 1 for n in ids.values()):
            found.append(f"PE ids {sorted(ids.elements())} (want 0..{pes - 1} once each)")
        pe_uids = {pe["metadata"]["uid"]: pe for pe in self.pes}
        per_pe = Counter(p["metadata"]["ownerReferences"][0]["uid"] for p in self.pods)
        orphans = [
            p["metadata"]["name"]
            for p in self.pods
            if p["metadata"]["ownerReferences"][0]["uid"] not in pe_uids
        ]
        if orphans:
            found.append(f"pods without a PE: {orphans}")
        for uid, pe in pe_uids.items():
            if per_pe[uid] != 1:
                found.append(f"PE {pe['metadata']['name']} has {per_pe[uid]} pods")
        for pod in self.pods:
            owner = pe_uids.get(pod["metadata"]["ownerReferences"][0]["uid"])
            launch = pod["metadata"]["labels"][LAUNCH_COUNT_LABEL]
            if owner is not None and str((owner.get("status") or {}).get("launchCount")) != launch:
                found.append(f"pod {pod['metadata']['name']} launch {launch} != PE status")
        if self.zombies:
            found.append(f"pods not counted as PE pods: {[z['metadata']['name'] for z in self.zombies]}")
        expected_cms = {name} | {f"{name}-{i}" for i in range(pes)}
        cms = Counter(cm["metadata"]["name"] for cm in self.config_maps)
        if set(cms) != expected_cms:
            found.append(f"ConfigMaps {sorted(set(cms) ^ expected_cms)} differ")
        services = {s["metadata"]["name"] for s in self.services}
        if services != {f"{name}-{i}" for i in range(pes)}:
            found.append(f"{len(services)} Services for {pes} PEs")
        for child in [*self.pes, *self.config_maps, *self.services, *self.host_pools]:
            owners = [r["uid"] for r in child["metadata"].get("ownerReferences") or ()]
            if owners != [job_uid]:
                found.append(f"{child['kind']} {child['metadata']['name']} owned by {owners}")
        return found


async def pe_pods(client: KubeClient, job: str) -> dict[int, tuple[str, int]]:
    """(pod uid, launch count) of each PE's pod, by PE id."""
    items, _ = await client.list_all(PODS, NS, label_selector=f"{JOB_LABEL}={job},{SVC_LABEL}=pe")
    return {
        int(p["metadata"]["labels"][PE_LABEL]): (
            p["metadata"]["uid"],
            int(p["metadata"]["labels"][LAUNCH_COUNT_LABEL]),
        )
        for p in items
        if not p["metadata"].get("deletionTimestamp")
    }
