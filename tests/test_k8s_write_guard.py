"""The write guard: reads stay open; a write comes from a trusted pod (by source address, or by a
token bound to it) or presents a token whose user the API server allows; anyone else gets a JSON
401/403. Over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from streams_k8s.k8s.objects import object_key
from streams_k8s.k8s.pod_addresses import PodsByAddress
from streams_k8s.k8s.reviews import Access, Decision, Review
from streams_k8s.k8s.write_guard import FORWARDED_AUTHORIZATION, WriteTarget, write_guard
from test_controller_pods_by_owner import Pods


def pod(job: str, ip: str = "127.0.0.1", phase: str = "Running") -> dict[str, Any]:
    labels = {"app": "streams", "svc": "pe", "job": job}
    return {
        "metadata": {"name": f"{job}-0", "namespace": "ns", "uid": f"uid-{job}", "labels": labels},
        "status": {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}]},
    }


def bound(name: str, uid: str, namespace: str = "ns") -> str:
    """A token whose review names the pod it is bound to (see `Reviews.token`)."""
    return f"bound:{namespace}:{name}:{uid}"


class Reviews:
    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.accesses: list[Access] = []

    async def token(self, token: str) -> Review:
        self.tokens.append(token)
        if token == "broken":
            raise ConnectionError("API server unreachable")
        if token.startswith("bound:"):  # a projected token: its service account's user, the pod in extra
            _, namespace, name, uid = token.split(":")
            extra = {
                "authentication.kubernetes.io/pod-name": (name,),
                "authentication.kubernetes.io/pod-uid": (uid,),
            }
            return Review(True, f"system:serviceaccount:{namespace}:default", extra=extra)
        return Review(token in ("good", "weak"), f"user-{token}", "bad token")

    async def access(self, user: Review, access: Access) -> Decision:
        self.accesses.append(access)
        return Decision(user.user == "user-good" and access.name == "j", "RBAC")


@pytest.fixture
async def api() -> AsyncIterator[tuple[str, Pods, Reviews]]:
    pods, reviews = Pods(), Reviews()

    def target(request: web.Request) -> WriteTarget | None:
        job = request.match_info["job"]
        if job == "missing":
            return None
        return WriteTarget(f"job ns/{job}", Access("update", "g", "jobs", "ns", job), "ns", {"job": job})

    guard = write_guard(target, PodsByAddress(pods), reviews.token, reviews.access)  # type: ignore[arg-type]

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=204)

    app = web.Application(middlewares=[guard])
    app.router.add_route("*", "/job/{job}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}", pods, reviews
    await runner.cleanup()


async def call(url: str, method: str = "PUT", token: str | None = None) -> tuple[int, Any, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with aiohttp.ClientSession() as http, http.request(method, url, headers=headers) as answer:
        body = await answer.json(content_type=None) if answer.status != 204 else None
        return answer.status, body, answer.headers.get("WWW-Authenticate", "")


async def test_reads_stay_open_and_writes_need_a_trusted_pod(api: tuple[str, Pods, Reviews]) -> None:
    base, pods, _ = api
    assert (await call(f"{base}/job/j", "GET"))[0] == 204
    status, body, challenge = await call(f"{base}/job/j")
    assert (status, body["reason"], challenge.startswith("Bearer")) == (401, "Unauthorized", True)
    pods.event("add", None, pod("j"))
    assert (await call(f"{base}/job/j"))[0] == 204
    status, body, _ = await call(f"{base}/job/k", "DELETE")  # another job's pod
    assert (status, body["reason"]) == (403, "Forbidden")
    assert "ns/j-0" in body["message"]
    # a terminated pod's address is no longer its own
    pods.event("update", pod("j"), pod("j", phase="Failed"))
    assert (await call(f"{base}/job/j"))[0] == 401
    pods.event("update", pod("j", phase="Failed"), pod("j", ip="10.0.0.9"))
    assert (await call(f"{base}/job/j"))[0] == 401


async def test_tokens_are_reviewed_then_authorized_and_cached(api: tuple[str, Pods, Reviews]) -> None:
    base, _, reviews = api
    for _ in range(3):
        assert (await call(f"{base}/job/j", token="good"))[0] == 204
    assert reviews.tokens == ["good"]
    assert len(reviews.accesses) == 1
    status, body, _ = await call(f"{base}/job/other", token="good")
    assert status == 403
    assert "update jobs.g 'other' in namespace ns" in body["message"]
    assert (await call(f"{base}/job/j", token="weak"))[0] == 403
    status, body, _ = await call(f"{base}/job/j", "GET", token="forged")  # a read with a bad token too
    assert (status, "bad token" in body["message"]) == (401, True)
    assert (await call(f"{base}/job/j", token="broken"))[0] == 401
    # a write naming nothing that exists: the handler answers, once the caller is authenticated
    assert (await call(f"{base}/job/missing", token="good"))[0] == 204
    assert (await call(f"{base}/job/missing"))[0] == 401


async def test_a_token_bound_to_a_trusted_pod_writes_as_the_pod_would(api: tuple[str, Pods, Reviews]) -> None:
    base, pods, reviews = api
    far = pod("j", ip="10.244.3.7")  # its address is not the caller's: only its token says who it is
    pods.store.put(object_key(far), far)
    pods.event("add", None, far)
    assert (await call(f"{base}/job/j", token=bound("j-0", "uid-j")))[0] == 204
    assert reviews.accesses == []  # trusted as its pod, no SubjectAccessReview
    # another job's pod: its service account is asked about, and may not
    status, body, _ = await call(f"{base}/job/k", token=bound("j-0", "uid-j"))
    assert (status, body["reason"]) == (403, "Forbidden")
    assert reviews.accesses[-1].name == "k"
    # a pod of that name that is not the token's (recreated: another uid), or one of another namespace
    assert (await call(f"{base}/job/j", token=bound("j-0", "uid-old")))[0] == 403
    assert (await call(f"{base}/job/j", token=bound("j-0", "uid-j", "elsewhere")))[0] == 403
    # a terminated pod writes no more
    done = pod("j", ip="10.244.3.7", phase="Succeeded")
    pods.store.put(object_key(done), done)
    pods.event("update", far, done)
    assert (await call(f"{base}/job/j", token=bound("j-0", "uid-j")))[0] == 403


async def test_a_token_the_api_servers_proxy_forwards_as_x_streams_authorization_is_reviewed_alike(
    api: tuple[str, Pods, Reviews],
) -> None:
    """kube-apiserver's service proxy drops `Authorization` once it authenticated the caller; the
    CLI repeats the token in `X-Streams-Authorization`, which is held to the same review."""
    base, _, reviews = api

    async def forwarded(token: str) -> int:
        headers = {FORWARDED_AUTHORIZATION: f"Bearer {token}"}
        async with aiohttp.ClientSession() as http, http.put(f"{base}/job/j", headers=headers) as answer:
            return answer.status

    assert await forwarded("good") == 204
    assert await forwarded("weak") == 403  # reviewed, then not allowed
    assert await forwarded("forged") == 401
    assert reviews.tokens == ["good", "weak", "forged"]
