"""`PUT /api/bundles/{namespace}/{name}?sha256=<hex>`: a bundle uploaded by a user (a route of the REST API).

`kubectl streams submitjob app.sab` sends the file here, then creates the Job naming it by digest
(`bundle.upload.sha256`). Who may upload: a user whose bearer token passes TokenReview and who may
`create streamsjobs.streams.ibm.com` in the namespace (SubjectAccessReview), checked by a write
guard of its own (the REST API's lets a reviewed token through on a path that names no job); no
pod may, by address or pod-bound token. A client reaching this server through the API server's
service proxy (`/api/v1/namespaces/<ns>/services/streams-api:api/proxy/...`) has its
`Authorization` header removed by the API server once it authenticated it, so the token may come
in `X-Streams-Authorization` instead (`k8s.write_guard.FORWARDED_AUTHORIZATION`).

The body is the bundle's bytes (`application/octet-stream`), at most `uploads.MAX_UPLOAD_BYTES`
(413 past it); its sha256 must be the query's (400 `DigestMismatch` otherwise: a transfer that
changed a byte never runs). It is kept in the namespace's ConfigMaps (`bundles.uploads`) and the
bundle cache; the answer (201) is `{"namespace", "name", "sha256", "size", "uploadedBy"}`.
"""

from __future__ import annotations

import asyncio
import hashlib
import re

from aiohttp import web

from streams_k8s.api.job import Bundle, UploadSource
from streams_k8s.controller.bundles.fetch import DIGEST, BundleCache, source_identity
from streams_k8s.controller.bundles.uploads import MAX_UPLOAD_BYTES, UploadedBundles
from streams_k8s.controller.kinds import JOBS
from streams_k8s.controller.rest.api import RestError, json_response
from streams_k8s.k8s.reviews import Access, AccessReviews, TokenReviews
from streams_k8s.k8s.write_guard import USER, WriteTarget, write_guard

NAMESPACE_KEY = "namespace"
PREFIX = "/api/bundles"
ROUTE = f"/{{{NAMESPACE_KEY}}}/{{name}}"  # under PREFIX
_READ_BYTES = 1 << 20
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a bundle's and a namespace's: a file name


def upload_target(request: web.Request) -> WriteTarget | None:
    """Who may upload to the path's namespace: users who may create Jobs there (no pod: the
    target's namespace is none a pod lives in)."""
    namespace = request.match_info.get(NAMESPACE_KEY)
    if namespace is None:
        return None
    access = Access("create", JOBS.group, JOBS.plural, namespace)
    return WriteTarget(f"the bundle store of namespace {namespace}", access, "", {})


class BundleUploadApi:
    def __init__(
        self,
        namespaces: tuple[str, ...],
        uploads: UploadedBundles,
        cache: BundleCache,
        tokens: TokenReviews,
        access: AccessReviews,
    ) -> None:
        """``namespaces``: those the operator runs the jobs of (empty: every namespace)."""
        self.namespaces, self.uploads, self.cache = namespaces, uploads, cache
        self.guard = write_guard(upload_target, None, tokens, access)

    def mount(self, app: web.Application) -> None:
        """Serve the upload under `PREFIX` of the REST API's ``app``."""
        uploads = web.Application(middlewares=[self.guard])  # within the API's error middlewares
        uploads.router.add_put(ROUTE, self.put_bundle)
        app.add_subapp(PREFIX, uploads)

    async def put_bundle(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info[NAMESPACE_KEY], request.match_info["name"]
        if self.namespaces and namespace not in self.namespaces:
            raise RestError(404, "NotFound", f"this operator does not run the jobs of namespace {namespace}")
        if not _SAFE_NAME.match(name) or not _SAFE_NAME.match(namespace):
            raise RestError(400, "BadRequest", f"'{name}' is not a bundle file name (letters, digits, '._-')")
        digest = request.query.get("sha256", "")
        if not DIGEST.match(digest):
            raise RestError(
                400, "BadRequest", "the query's sha256 (the bundle's digest, 64 hex digits) is required"
            )
        data = await _body(request)
        if (found := hashlib.sha256(data).hexdigest()) != digest:
            raise RestError(
                400,
                "DigestMismatch",
                f"the body's sha256 is {found[:12]}, not {digest[:12]} as the query says",
            )
        user = request.get(USER, "")
        await self.uploads.save(namespace, name, data, user)
        source = source_identity(Bundle(name=name, upload=UploadSource(sha256=digest)))
        await asyncio.to_thread(self.cache.store, namespace, name, data, source)
        answer = {
            "namespace": namespace,
            "name": name,
            "sha256": digest,
            "size": len(data),
            "uploadedBy": user,
        }
        return json_response(answer, status=201)


async def _body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_UPLOAD_BYTES:
        raise RestError(413, "TooLarge", f"a bundle upload is at most {MAX_UPLOAD_BYTES} bytes")
    data = bytearray()
    while chunk := await request.content.read(_READ_BYTES):
        data += chunk
        if len(data) > MAX_UPLOAD_BYTES:
            raise RestError(413, "TooLarge", f"a bundle upload is at most {MAX_UPLOAD_BYTES} bytes")
    if not data:
        raise RestError(400, "BadRequest", "the body is empty: it is the bundle's bytes")
    return bytes(data)
