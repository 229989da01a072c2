"""Size limits over HTTP, on the sandbox and on kube-apiserver (`writes_fixture`): request bodies
over kube-apiserver's 3 MiB are refused unread (413), and an object etcd would refuse (over its
1.5 MiB request limit) is a 500 `etcdserver: request is too large`, as kube-apiserver passes it on."""

from __future__ import annotations

import re

import pytest

from api_writes import Writes
from sandbox_crds import WIDGETS, widget

pytest_plugins = ["writes_fixture"]

CMS = "/api/v1/namespaces/{namespace}/configmaps"
MIB = 1024 * 1024
pytestmark = [pytest.mark.sandbox(simulate=False), pytest.mark.usefixtures("widgets_served")]


async def test_request_bodies_over_three_mebibytes_are_refused(writes: Writes) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "huge"},
        "data": {"a": "x" * (3 * MIB)},
    }
    reply = await writes.create(CMS, body)
    assert reply.status == 413
    assert reply.body["reason"] == "RequestEntityTooLarge"
    assert reply.message == "Request entity too large: limit is 3145728"
    assert (await writes.get(f"{CMS}/huge")).status == 404
    reply = await writes.patch(f"{CMS}/huge", {"data": {"a": "x" * (3 * MIB)}})
    assert reply.status == 413


async def test_objects_over_what_etcd_takes_are_refused_as_kube_apiserver_does(writes: Writes) -> None:
    # A custom resource is stored as JSON: 1.8 MiB is over etcd's 1.5 MiB request limit...
    reply = await writes.create(WIDGETS, widget("big", extra={"blob": "x" * (MIB * 9 // 5)}))
    assert reply.status == 500
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "etcdserver: request is too large",
        "code": 500,
    }
    # ... and over 2 MiB, etcd's client does not send it (the size it says is the sandbox's estimate).
    reply = await writes.create(WIDGETS, widget("bigger", extra={"blob": "x" * (2 * MIB)}))
    assert reply.status == 500
    assert re.fullmatch(
        r"rpc error: code = ResourceExhausted desc = trying to send message larger than max "
        r"\(2\d{6} vs\. 2097152\)",
        reply.message,
    )
    assert (await writes.create(WIDGETS, widget("fits", extra={"blob": "x" * MIB}))).status == 201
    # A full ConfigMap (its 1 MiB of data) still fits etcd.
    full = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "full"}, "data": {"a": '"' * MIB}}
    assert (await writes.create(CMS, full)).status == 201
