"""Built-in kinds decode like the API server's Go types: a null field is an unset field."""

from __future__ import annotations

import aiohttp

from streams_k8s.sandbox import Sandbox

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


async def test_null_in_a_builtin_field_clears_it() -> None:
    async with Sandbox(simulate=False) as sandbox, aiohttp.ClientSession(sandbox.url) as http:
        lease = {"metadata": {"name": "lock"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}
        async with http.post(
            LEASES, json={"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", **lease}
        ) as r:
            stored = await r.json()
        stored["spec"]["holderIdentity"] = None  # how a leader gives its Lease up
        async with http.put(f"{LEASES}/lock", json=stored) as r:
            assert r.status == 200
            released = await r.json()
        assert released["spec"] == {"leaseDurationSeconds": 15}
