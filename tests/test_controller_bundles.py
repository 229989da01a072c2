"""Bundle fetching: sources, the content-addressed cache, pull policies, retries and trust."""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

from streams_k8s.api.job import Bundle
from streams_k8s.controller.bundles.fetch import BundleCache, BundleChanged, BundleError, BundleFetcher
from streams_k8s.controller.children.certificates import transport_certificate
from tls_material import make_authority

SAB = b"PK\x03\x04 not really a zip, the fetcher does not look inside"


@dataclass
class Store:
    """Secrets and ConfigMaps by (namespace, name), as the controller's cache would answer."""

    secrets: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    config_maps: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    async def secret(self, namespace: str, name: str) -> Mapping[str, str]:
        return self.secrets[namespace, name]

    async def config_map(self, namespace: str, name: str) -> Mapping[str, str]:
        return self.config_maps[namespace, name]


@dataclass
class Origin:
    """An HTTP server that serves the bundle, answering some requests with errors first."""

    url: str
    requests: list[web.Request] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)
    body: bytes = SAB


async def _serve(context: ssl.SSLContext | None = None) -> AsyncIterator[Origin]:
    origin = Origin(url="")

    async def handler(request: web.Request) -> web.Response:
        origin.requests.append(request)
        if origin.failures:
            return web.json_response({"error": "injected"}, status=origin.failures.pop(0))
        return web.Response(body=origin.body, content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    origin.url = f"{'https' if context else 'http'}://127.0.0.1:{port}/bundles/app.sab"
    yield origin
    await runner.cleanup()


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    async for served in _serve():
        yield served


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


def fetcher(tmp_path: Path, session: aiohttp.ClientSession, store: Store | None = None) -> BundleFetcher:
    store = store or Store()
    return BundleFetcher(
        BundleCache(tmp_path / "cache"),
        session,
        read_secret=store.secret,
        read_config_map=store.config_map,
        first_backoff=0.01,
    )


async def test_file_bundle_is_cached_by_content(tmp_path: Path, session: aiohttp.ClientSession) -> None:
    source = tmp_path / "app.sab"
    source.write_bytes(SAB)
    bundles = fetcher(tmp_path, session)
    spec = Bundle.model_validate({"name": "app.sab", "file": {"path": str(source)}})
    first = await bundles.fetch("ns", spec)
    assert (first.cached, first.path.read_bytes()) == (False, SAB)
    assert first.path.name == f"{first.digest}.sab"
    # IfNotPresent: a changed file is not read again.
    source.write_bytes(b"new content")
    again = await bundles.fetch("ns", spec)
    assert (again.cached, again.digest) == (True, first.digest)
    # Always: fetched again, and the name now points at the new content.
    always = await bundles.fetch("ns", spec.model_copy(update={"pull_policy": "Always"}))
    assert (always.cached, always.path.read_bytes()) == (False, b"new content")
    # Another namespace has its own names but shares content.
    other = await bundles.fetch("other", spec)
    assert other.digest == always.digest


async def test_bundles_of_one_name_from_two_sources_never_share_content(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    bundles = fetcher(tmp_path, session)
    first, second = tmp_path / "a" / "app.sab", tmp_path / "b" / "app.sab"
    for path, content in ((first, b"PK first build"), (second, b"PK second build")):
        path.parent.mkdir()
        path.write_bytes(content)

    def from_file(path: Path) -> Bundle:  # IfNotPresent, the default
        return Bundle.model_validate({"name": "app.sab", "file": {"path": str(path)}})

    a = await bundles.fetch("ns", from_file(first))
    b = await bundles.fetch("ns", from_file(second))
    assert (a.path.read_bytes(), b.path.read_bytes(), b.cached) == (
        b"PK first build",
        b"PK second build",
        False,
    )
    # Each source keeps its own content: IfNotPresent serves it without reading the file again.
    first.write_bytes(b"PK edited")
    again = await bundles.fetch("ns", from_file(first))
    assert (again.cached, again.digest) == (True, a.digest)
    # Another URL, or the same URL with another Secret's token, is another source.
    store = Store(
        secrets={("ns", s): {"token": base64.b64encode(s.encode()).decode()} for s in ("one", "two")}
    )
    bundles = fetcher(tmp_path, session, store)
    for url, secret in ((origin.url, "one"), (origin.url, "two"), (f"{origin.url}?ref=v2", "one")):
        spec = Bundle.model_validate({"name": "app.sab", "github": {"url": url, "secret": secret}})
        assert (await bundles.fetch("ns", spec)).cached is False
    assert [r.headers["Authorization"] for r in origin.requests] == ["token one", "token two", "token one"]
    spec = Bundle.model_validate({"name": "app.sab", "github": {"url": origin.url, "secret": "two"}})
    assert (await bundles.fetch("ns", spec)).cached is True
    assert len(origin.requests) == 3


async def test_an_unreachable_source_never_gets_a_same_named_bundle_from_elsewhere(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    source = tmp_path / "app.sab"
    source.write_bytes(SAB)
    bundles = fetcher(tmp_path, session)
    from_file = Bundle.model_validate({"name": "app.sab", "file": {"path": str(source)}})
    for namespace in ("ns", "other"):
        await bundles.fetch(namespace, from_file)
    unreachable = Bundle.model_validate({"name": "app.sab", "http": {"url": "http://127.0.0.1:9/app.sab"}})
    for namespace in ("ns", "other"):
        with pytest.raises(BundleError, match="failed") as info:
            await bundles.fetch(namespace, unreachable)
        assert info.value.transient
    # The repository's name index still means the file's bundle (what `HGET apps app.sab` serves).
    assert BundleCache(tmp_path / "cache").lookup("other", "app.sab") is not None


async def test_missing_file_and_missing_source(tmp_path: Path, session: aiohttp.ClientSession) -> None:
    bundles = fetcher(tmp_path, session)
    with pytest.raises(BundleError, match="is not a regular file") as info:
        await bundles.fetch("ns", Bundle.model_validate({"name": "a.sab", "file": {"path": str(tmp_path)}}))
    assert info.value.reason == "BundleNotFound"
    with pytest.raises(
        BundleError, match="no file, http, github or upload source and is not in the bundle cache"
    ):
        await bundles.fetch("ns", Bundle.model_validate({"name": "a.sab"}))


async def test_sourceless_bundle_comes_from_the_cache(tmp_path: Path, session: aiohttp.ClientSession) -> None:
    cache = BundleCache(tmp_path / "cache")
    stored = cache.store("ns", "uploaded.sab", SAB)
    bundles = fetcher(tmp_path, session)
    found = await bundles.fetch("ns", Bundle.model_validate({"name": "uploaded.sab", "pullPolicy": "Always"}))
    assert (found.digest, found.cached) == (stored.digest, True)


async def test_pinned_content_comes_from_the_cache_whatever_the_pull_policy(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    spec = Bundle.model_validate({"name": "a.sab", "pullPolicy": "Always", "http": {"url": origin.url}})
    submitted = await fetcher(tmp_path, session).fetch("ns", spec)
    origin.body = b"PK\x03\x04 a newer build"
    pinned = await fetcher(tmp_path, session).fetch_pinned("ns", spec, submitted.digest)
    assert (pinned.cached, pinned.path.read_bytes()) == (True, SAB)
    assert len(origin.requests) == 1  # not fetched


async def test_pinned_content_missing_from_the_cache_is_fetched_and_checked(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    spec = Bundle.model_validate({"name": "a.sab", "http": {"url": origin.url}})
    submitted = await fetcher(tmp_path / "first-replica", session).fetch("ns", spec)
    replica = fetcher(tmp_path / "new-replica", session)
    same = await replica.fetch_pinned("ns", spec, submitted.digest)  # IfNotPresent: still fetched
    assert (same.cached, same.digest) == (False, submitted.digest)

    origin.body = b"PK\x03\x04 a newer build"
    changed = fetcher(tmp_path / "third-replica", session)
    with pytest.raises(BundleChanged, match=f"not sha256:{submitted.digest[:12]} it was submitted with"):
        await changed.fetch_pinned("ns", spec, submitted.digest)
    # The other content is not filed under the bundle's name: nothing serves it for this job.
    assert BundleCache(tmp_path / "third-replica" / "cache").lookup("ns", "a.sab") is None
    with pytest.raises(
        BundleError, match=r"no file, http, github or upload source and sha256:\w{12} is not in the"
    ):
        await changed.fetch_pinned("ns", Bundle.model_validate({"name": "a.sab"}), submitted.digest)


async def test_http_bundle_and_accept_header(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    fetched = await fetcher(tmp_path, session).fetch(
        "ns", Bundle.model_validate({"name": "a.sab", "http": {"url": origin.url}})
    )
    assert fetched.path.read_bytes() == SAB
    assert origin.requests[0].headers["Accept"] == "application/octet-stream"


async def test_transient_errors_are_retried(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    origin.failures = [503, 429, 500]
    fetched = await fetcher(tmp_path, session).fetch(
        "ns", Bundle.model_validate({"name": "a.sab", "http": {"url": origin.url}})
    )
    assert fetched.path.read_bytes() == SAB
    assert len(origin.requests) == 4


async def test_retries_are_bounded(tmp_path: Path, origin: Origin, session: aiohttp.ClientSession) -> None:
    origin.failures = [500] * 10
    with pytest.raises(BundleError, match="answered 500"):
        await fetcher(tmp_path, session).fetch(
            "ns", Bundle.model_validate({"name": "a.sab", "http": {"url": origin.url}})
        )
    assert len(origin.requests) == 4


async def test_client_errors_fail_at_once(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    origin.failures = [404]
    with pytest.raises(BundleError, match="answered 404") as info:
        await fetcher(tmp_path, session).fetch(
            "ns", Bundle.model_validate({"name": "a.sab", "http": {"url": origin.url}})
        )
    assert (info.value.reason, len(origin.requests)) == ("BundleFetchFailed", 1)


async def test_unreachable_host_is_transient(tmp_path: Path, session: aiohttp.ClientSession) -> None:
    spec = Bundle.model_validate({"name": "a.sab", "http": {"url": "http://127.0.0.1:9/nothing.sab"}})
    with pytest.raises(BundleError, match="failed") as info:
        await fetcher(tmp_path, session).fetch("ns", spec)
    assert info.value.transient


async def test_github_sends_the_token_from_the_secret(
    tmp_path: Path, origin: Origin, session: aiohttp.ClientSession
) -> None:
    store = Store(secrets={("ns", "gh"): {"token": base64.b64encode(b"s3cr3t\n").decode()}})
    spec = Bundle.model_validate({"name": "a.sab", "github": {"url": origin.url, "secret": "gh"}})
    await fetcher(tmp_path, session, store).fetch("ns", spec)
    headers = origin.requests[0].headers
    assert headers["Authorization"] == "token s3cr3t"
    assert headers["Accept"] == "application/vnd.github.v3.raw"
    with pytest.raises(BundleError, match="Secret 'gone'") as info:
        await fetcher(tmp_path, session, store).fetch(
            "ns", Bundle.model_validate({"name": "b.sab", "github": {"url": origin.url, "secret": "gone"}})
        )
    assert info.value.reason == "SecretNotFound"


async def test_https_trusts_only_the_configured_authority(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    ours, theirs = make_authority(tmp_path, "ours"), make_authority(tmp_path, "theirs")
    store = Store(
        config_maps={("ns", "ca"): {"ca.crt": ours.ca_pem}, ("ns", "wrong"): {"ca.crt": theirs.ca_pem}}
    )
    async for served in _serve(ours.server_context):
        trusted = {"url": served.url, "certificationAuthority": {"configMapName": "ca"}}
        fetched = await fetcher(tmp_path, session, store).fetch(
            "ns", Bundle.model_validate({"name": "a.sab", "http": trusted})
        )
        assert fetched.path.read_bytes() == SAB
        wrong = {"url": served.url, "certificationAuthority": {"configMapName": "wrong", "subPath": "ca.crt"}}
        with pytest.raises(BundleError, match="TLS verification failed"):
            await fetcher(tmp_path, session, store).fetch(
                "ns", Bundle.model_validate({"name": "b.sab", "http": wrong})
            )
        # Without a configured CA the system trust store applies, which does not know ours either.
        with pytest.raises(BundleError, match="TLS verification failed"):
            await fetcher(tmp_path, session, store).fetch(
                "ns", Bundle.model_validate({"name": "c.sab", "http": {"url": served.url}})
            )
        missing = {"url": served.url, "certificationAuthority": {"configMapName": "ca", "subPath": "nope"}}
        with pytest.raises(BundleError, match="has no key 'nope'"):
            await fetcher(tmp_path, session, store).fetch(
                "ns", Bundle.model_validate({"name": "d.sab", "http": missing})
            )


def test_bundle_names_cannot_escape_the_cache(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="plain file name"):
        BundleCache(tmp_path).store("ns", "../escape.sab", SAB)
    assert not (tmp_path.parent / "escape.sab").exists()


def test_transport_certificate_matches_the_runtime_contract() -> None:
    cert_pem, key_pem = transport_certificate(30)
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    assert cert.subject.rfc4514_string() == "C=US,L=NewYork,CN=Streams"
    assert cert.issuer == cert.subject
    assert cert.public_key().key_size == 2048  # type: ignore[union-attr]
    assert cert.signature_hash_algorithm is not None
    assert cert.signature_hash_algorithm.name == "sha256"
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days == 30
    assert "PRIVATE KEY" in key_pem
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "Streams"
