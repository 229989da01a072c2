"""Uploaded bundles kept in the API server (`bundles.uploads`): chunked, restored whole, refused
when a chunk no longer holds what was uploaded; a second upload of the same content writes nothing."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import AsyncIterator

import pytest

from streams_k8s.controller.bundles.uploads import CHUNK_BYTES, UPLOAD_LABEL, UploadedBundles, chunk_name
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.sandbox import Sandbox


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(sandbox.kubeconfig_path)) as c:
        yield c


@pytest.mark.sandbox(simulate=False)
async def test_an_upload_is_kept_in_chunks_and_restored_only_whole(client: KubeClient) -> None:
    uploads = UploadedBundles(client)
    data = os.urandom(2 * CHUNK_BYTES + 1000)
    digest = await uploads.save("default", "big.sab", data, "alice")
    assert digest == hashlib.sha256(data).hexdigest()
    kept, _ = await client.list_all(CONFIGMAPS, "default", label_selector=UPLOAD_LABEL)
    assert sorted(c["metadata"]["name"] for c in kept) == [chunk_name(digest, i) for i in range(3)]
    assert all(c["immutable"] for c in kept)
    assert await uploads.restore("default", digest) == data
    assert await uploads.save("default", "again.sab", data, "bob") == digest  # already there: no error
    assert await uploads.restore("other", digest) is None  # another namespace's uploads are its own
    assert await uploads.restore("default", "0" * 64) is None

    # A chunk replaced by other bytes (it is immutable: deleted and created again) is never served.
    last = next(c for c in kept if c["metadata"]["name"] == chunk_name(digest, 2))
    await client.delete(CONFIGMAPS, chunk_name(digest, 2), "default")
    forged = {**last, "binaryData": {"chunk": base64.b64encode(b"x" * 1000).decode()}}
    forged["metadata"] = {k: v for k, v in last["metadata"].items() if k in ("name", "labels", "annotations")}
    await client.create(CONFIGMAPS, forged, "default")
    assert await uploads.restore("default", digest) is None
