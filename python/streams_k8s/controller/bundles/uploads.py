"""Uploaded bundles, kept in ConfigMaps of the Job's namespace so that they outlive the operator.

`kubectl streams submitjob app.sab` uploads the bundle to the operator (`bundles.upload_api`); the Job
then names it by digest (`bundle.upload.sha256`). The operator's bundle cache is an emptyDir of its
pod: a restarted pod, or a standby replica that takes over the lead on another node, starts with an
empty one. The API server is the one store every replica reads, so each upload is written there,
in chunks (a ConfigMap holds at most 1 MiB), named by the content's digest:

    streams-bundle-<sha256>-<i>    binaryData.chunk    (i = 0 .. chunks-1)

Chunk 0 carries the chunk count, the bundle's name and who uploaded it in its annotations. Being
named by content, an upload of the same bundle again (by anyone) finds its chunks there and writes
nothing; a restore checks the reassembled digest, so a chunk edited in place is refused, never run.
Uploads are limited to `MAX_UPLOAD_BYTES` (etcd is no blob store; bundles built with streams-k8s
are a few MB). Uploads no Job names any more are not removed by the operator (a Job may be created
from one later): `kubectl delete cm -l streams.ibm.com/bundle-upload` removes them all.
"""

from __future__ import annotations

import base64
import hashlib

from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS
from streams_k8s.k8s.objects import Object

MAX_UPLOAD_BYTES = 64 * 1024 * 1024
CHUNK_BYTES = 768 * 1024  # below a ConfigMap's 1 MiB with its metadata
UPLOAD_LABEL = "streams.ibm.com/bundle-upload"
DIGEST_ANNOTATION = "streams.ibm.com/bundle-sha256"
CHUNKS_ANNOTATION = "streams.ibm.com/bundle-chunks"
NAME_ANNOTATION = "streams.ibm.com/bundle-name"
UPLOADER_ANNOTATION = "streams.ibm.com/uploaded-by"


def chunk_name(digest: str, index: int) -> str:
    return f"streams-bundle-{digest}-{index}"


class UploadedBundles:
    """The uploads of every namespace, read and written as the operator."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def save(self, namespace: str, name: str, data: bytes, uploader: str) -> str:
        """Keep ``data`` (as ``name``, uploaded by ``uploader``); its sha256."""
        digest = hashlib.sha256(data).hexdigest()
        chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
        # The first chunk last: a restore that finds it finds every other one.
        for index in [*range(1, len(chunks)), 0]:
            annotations = {DIGEST_ANNOTATION: digest}
            if index == 0:
                annotations |= {
                    CHUNKS_ANNOTATION: str(len(chunks)),
                    NAME_ANNOTATION: name,
                    UPLOADER_ANNOTATION: uploader,
                }
            config_map = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": chunk_name(digest, index),
                    "namespace": namespace,
                    "labels": {UPLOAD_LABEL: "true", "app.kubernetes.io/managed-by": "streams-k8s"},
                    "annotations": annotations,
                },
                "immutable": True,
                "binaryData": {"chunk": base64.b64encode(chunks[index]).decode()},
            }
            await self.client.create_if_absent(CONFIGMAPS, config_map)
        return digest

    async def restore(self, namespace: str, digest: str) -> bytes | None:
        """The upload of this digest, or None when there is none (or it no longer matches)."""
        first = await self._chunk(namespace, digest, 0)
        if first is None:
            return None
        annotations = first["metadata"].get("annotations") or {}
        try:
            count = int(annotations.get(CHUNKS_ANNOTATION, ""))
        except ValueError:
            return None
        parts = [first]
        for index in range(1, count):
            part = await self._chunk(namespace, digest, index)
            if part is None:
                return None
            parts.append(part)
        data = b"".join(base64.b64decode((p.get("binaryData") or {}).get("chunk", "")) for p in parts)
        return data if hashlib.sha256(data).hexdigest() == digest else None

    async def _chunk(self, namespace: str, digest: str, index: int) -> Object | None:
        try:
            return await self.client.get(CONFIGMAPS, chunk_name(digest, index), namespace)
        except ApiError as err:
            if err.not_found:
                return None
            raise
