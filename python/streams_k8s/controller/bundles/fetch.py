"""Bundle fetching: a Job's `.sab` from a file, an HTTP(S) URL, GitHub or an upload, through a local cache.

The cache is content-addressed (`<root>/sha256/<digest>.sab`), so the same bundle submitted by
many jobs is stored once, with two indexes per namespace holding digests (writes are atomic, so an
index always points at complete content):

- by source (`<root>/sources/<namespace>/<sha256 of the source>`): what was last fetched from one
  place, named by everything that decides what a fetch gets (`source_identity`: the kind, the file
  path, the URL with its trust anchor, the GitHub URL with the Secret whose token is sent).
  `pullPolicy: IfNotPresent` serves a source fetched before without fetching, and only that source:
  two jobs whose `app.sab` come from different paths or URLs never share content, and a source that
  cannot be reached is never stood in for by a same-named bundle from elsewhere.
  `Always` fetches every time.
- by name (`<root>/names/<namespace>/<bundle name>`): the bundle last fetched under that name, the
  bundle repository's `apps` hash (what `HGET apps <name>` serves a client that is not a PE pod).
  A bundle with no source means that bundle (as the original's repository lookup did).
`fetch_pinned` wants exactly the content a job was submitted with (its digest): it is served from
the content store without fetching, whatever the pull policy; a fetch that finds other content
raises `BundleChanged` and leaves the cache as it was.
Transient failures (connection errors, 5xx, 429) are retried with backoff; others fail at once.
An uploaded bundle (`bundle.upload.sha256`) is that content: from the cache, else from the uploads
kept in the API server (`bundles.uploads`), which a restarted operator starts without.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from streams_k8s.api.job import Bundle, PullPolicy

# Bundles are zip files of compiled applications; the largest real ones are tens of MB.
MAX_BUNDLE_BYTES = 512 * 1024 * 1024
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")  # a sha256, as the cache and Job status write it

# Reads the `data` of a Secret or ConfigMap: (namespace, name) -> data, raising KeyError if absent.
DataReader = Callable[[str, str], Awaitable[Mapping[str, str]]]
# Reads an uploaded bundle: (namespace, sha256) -> its bytes, or None if it was never uploaded there.
UploadReader = Callable[[str, str], Awaitable[bytes | None]]


class BundleError(Exception):
    """A bundle that cannot be had; `reason` is a condition reason, the message says what to fix."""

    def __init__(self, reason: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.transient = transient


BUNDLE_CHANGED = "BundleChanged"


class BundleChanged(BundleError):
    """The bundle's source now holds other content than the digest a job was submitted with."""

    def __init__(self, name: str, pinned: str, found: str) -> None:
        super().__init__(
            BUNDLE_CHANGED,
            f"bundle {name} is now sha256:{found[:12]}, not sha256:{pinned[:12]} it was submitted with",
        )


@dataclass(frozen=True, slots=True)
class FetchedBundle:
    name: str
    digest: str
    path: Path
    cached: bool  # served from the cache without fetching


def source_identity(bundle: Bundle) -> str | None:
    """What decides the content a fetch of ``bundle`` gets (None: it has no source), as a digest."""
    identity: dict[str, str | None]
    if bundle.file is not None:
        identity = {"file": os.path.normpath(bundle.file.path)}
    elif bundle.http is not None:
        authority = bundle.http.certification_authority
        identity = {
            "http": bundle.http.url,
            # the trust anchor decides which servers are believed
            "configMap": authority.config_map_name if authority else None,
            "key": (authority.sub_path or "ca.crt") if authority else None,
        }
    elif bundle.github is not None:
        # the token decides what may be read: another Secret is another source
        identity = {"github": bundle.github.url, "secret": bundle.github.secret}
    elif bundle.upload is not None:
        identity = {"upload": bundle.upload.sha256}
    else:
        return None
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


class BundleCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _index(self, namespace: str, name: str) -> Path:
        if not _SAFE_NAME.match(name) or not _SAFE_NAME.match(namespace):
            raise BundleError("InvalidBundleName", f"bundle name '{name}' must be a plain file name")
        return self.root / "names" / namespace / name

    def _source_index(self, namespace: str, source: str) -> Path:
        if not _SAFE_NAME.match(namespace) or not DIGEST.match(source):
            raise BundleError("InvalidBundleName", f"namespace '{namespace}' must be a plain file name")
        return self.root / "sources" / namespace / source

    def content_path(self, digest: str) -> Path:
        return self.root / "sha256" / f"{digest}.sab"

    def content(self, name: str, digest: str) -> FetchedBundle | None:
        """The stored content with this digest, if the cache has it."""
        path = self.content_path(digest)
        return FetchedBundle(name, digest, path, cached=True) if path.is_file() else None

    def _read(self, index: Path, name: str) -> FetchedBundle | None:
        try:
            digest = index.read_text().strip()
        except FileNotFoundError:
            return None
        return self.content(name, digest)

    def lookup(self, namespace: str, name: str) -> FetchedBundle | None:
        """The bundle last stored under ``name`` in ``namespace``, from any source."""
        return self._read(self._index(namespace, name), name)

    def from_source(self, namespace: str, name: str, source: str) -> FetchedBundle | None:
        """The bundle last fetched from ``source`` (a `source_identity`) in ``namespace``."""
        return self._read(self._source_index(namespace, source), name)

    def store(self, namespace: str, name: str, data: bytes, source: str | None = None) -> FetchedBundle:
        """File ``data`` under ``name`` and, when it was fetched, under its ``source``."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.content_path(digest)
        if not path.is_file():
            _atomic_write(path, data)
        if source is not None:
            _atomic_write(self._source_index(namespace, source), digest.encode())
        _atomic_write(self._index(namespace, name), digest.encode())
        return FetchedBundle(name, digest, path, cached=False)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class BundleFetcher:
    def __init__(
        self,
        cache: BundleCache,
        session: aiohttp.ClientSession,
        *,
        read_secret: DataReader,
        read_config_map: DataReader,
        read_upload: UploadReader | None = None,
        attempts: int = 4,
        first_backoff: float = 0.5,
        timeout: float = 60.0,
    ) -> None:
        self._cache = cache
        self._session = session
        self._read_secret = read_secret
        self._read_config_map = read_config_map
        self._read_upload = read_upload
        self._attempts = attempts
        self._first_backoff = first_backoff
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def fetch(self, namespace: str, bundle: Bundle) -> FetchedBundle:
        source = source_identity(bundle)
        if source is None:  # the repository's bundle of that name
            cached = self._cache.lookup(namespace, bundle.name)
        elif bundle.pull_policy is PullPolicy.IF_NOT_PRESENT:
            cached = self._cache.from_source(namespace, bundle.name, source)
        else:
            cached = None
        if cached is not None:
            return cached
        data = await self._download_with_retries(namespace, bundle, "is not in the bundle cache")
        return self._cache.store(namespace, bundle.name, data, source)

    async def fetch_pinned(self, namespace: str, bundle: Bundle, digest: str) -> FetchedBundle:
        """Exactly the content with this sha256: from the cache, else fetched and checked."""
        cached = self._cache.content(bundle.name, digest)
        if cached is not None:
            return cached
        data = await self._download_with_retries(
            namespace, bundle, f"sha256:{digest[:12]} is not in the bundle cache"
        )
        if (found := hashlib.sha256(data).hexdigest()) != digest:
            raise BundleChanged(bundle.name, digest, found)
        return self._cache.store(namespace, bundle.name, data, source_identity(bundle))

    async def _download_with_retries(self, namespace: str, bundle: Bundle, not_cached: str) -> bytes:
        if not _has_source(bundle):
            raise BundleError(
                "BundleNotFound",
                f"bundle '{bundle.name}' has no file, http, github or upload source and {not_cached}",
            )
        return await self._with_retries(lambda: self._download(namespace, bundle))

    async def _with_retries(self, download: Callable[[], Awaitable[bytes]]) -> bytes:
        attempt = 0
        while True:
            try:
                return await download()
            except BundleError as err:
                attempt += 1
                if not err.transient or attempt >= self._attempts:
                    raise
            await asyncio.sleep(self._first_backoff * 2 ** (attempt - 1))

    async def _download(self, namespace: str, bundle: Bundle) -> bytes:
        if bundle.file is not None:
            return _read_file(Path(bundle.file.path))
        if bundle.github is not None:
            headers = {"Accept": "application/vnd.github.v3.raw"}
            if bundle.github.secret:
                headers["Authorization"] = (
                    f"token {await self._github_token(namespace, bundle.github.secret)}"
                )
            return await self._get(str(bundle.github.url), headers, None)
        if bundle.upload is not None:
            return await self._uploaded(namespace, bundle.name, bundle.upload.sha256)
        assert bundle.http is not None
        context = None
        if (authority := bundle.http.certification_authority) is not None:
            context = await self._trust_only(
                namespace, authority.config_map_name, authority.sub_path or "ca.crt"
            )
        return await self._get(bundle.http.url, {"Accept": "application/octet-stream"}, context)

    async def _uploaded(self, namespace: str, name: str, digest: str) -> bytes:
        if (cached := self._cache.content(name, digest)) is not None:
            return cached.path.read_bytes()
        data = await self._read_upload(namespace, digest) if self._read_upload is not None else None
        if data is None:
            raise BundleError(
                "BundleNotUploaded",
                f"bundle {name} sha256:{digest[:12]} was not uploaded to namespace {namespace} "
                f"(kubectl streams submitjob {name} uploads it)",
            )
        return data

    async def _github_token(self, namespace: str, secret: str) -> str:
        try:
            data = await self._read_secret(namespace, secret)
        except KeyError:
            raise BundleError(
                "SecretNotFound", f"Secret '{secret}' (bundle.github.secret) does not exist"
            ) from None
        if "token" not in data:
            raise BundleError("SecretNotFound", f"Secret '{secret}' has no 'token' key for the GitHub token")
        return base64.b64decode(data["token"]).decode().strip()

    async def _trust_only(self, namespace: str, config_map: str, key: str) -> ssl.SSLContext:
        try:
            data = await self._read_config_map(namespace, config_map)
        except KeyError:
            raise BundleError(
                "CertificateAuthorityNotFound",
                f"ConfigMap '{config_map}' (certificationAuthority) does not exist",
            ) from None
        if key not in data:
            raise BundleError("CertificateAuthorityNotFound", f"ConfigMap '{config_map}' has no key '{key}'")
        # The given CA is the only trust anchor: no system certificates.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_verify_locations(cadata=data[key])
        except ssl.SSLError as err:
            raise BundleError(
                "CertificateAuthorityInvalid",
                f"ConfigMap '{config_map}' key '{key}' is not a PEM certificate: {err}",
            ) from err
        return context

    async def _get(self, url: str, headers: dict[str, str], context: ssl.SSLContext | None) -> bytes:
        try:
            async with self._session.get(
                url, headers=headers, ssl=context if context is not None else True, timeout=self._timeout
            ) as response:
                if response.status >= 400:
                    transient = response.status >= 500 or response.status == 429
                    raise BundleError(
                        "BundleFetchFailed", f"GET {url} answered {response.status}", transient=transient
                    )
                if (response.content_length or 0) > MAX_BUNDLE_BYTES:
                    raise BundleError("BundleTooLarge", f"{url} is larger than {MAX_BUNDLE_BYTES} bytes")
                data = bytearray()
                async for chunk in response.content.iter_chunked(1 << 20):
                    data += chunk
                    if len(data) > MAX_BUNDLE_BYTES:
                        raise BundleError("BundleTooLarge", f"{url} is larger than {MAX_BUNDLE_BYTES} bytes")
                return bytes(data)
        except aiohttp.ClientSSLError as err:
            raise BundleError("BundleFetchFailed", f"GET {url}: TLS verification failed: {err}") from err
        except (aiohttp.ClientError, TimeoutError) as err:
            message = f"GET {url} failed: {err or type(err).__name__}"
            raise BundleError("BundleFetchFailed", message, transient=True) from err


def _has_source(bundle: Bundle) -> bool:
    return any(source is not None for source in (bundle.file, bundle.http, bundle.github, bundle.upload))


def _read_file(path: Path) -> bytes:
    try:
        if not path.is_file():
            raise BundleError("BundleNotFound", f"bundle.file.path '{path}' is not a regular file")
        if path.stat().st_size > MAX_BUNDLE_BYTES:
            raise BundleError("BundleTooLarge", f"'{path}' is larger than {MAX_BUNDLE_BYTES} bytes")
        return path.read_bytes()
    except OSError as err:
        raise BundleError("BundleNotFound", f"cannot read bundle.file.path '{path}': {err.strerror}") from err
