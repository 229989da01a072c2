"""Name resolution as the PE runtime does it, for tools and tests.

Operator port → PE port comes from the mounted name table; PE port → address is the PE's headless
Service `<job>-<pe>.<namespace>` on TCP 10000 + port id, the job name coming from the instance
REST API (`/api/state/job/by-id/{id}/name`) so that cross-job connections resolve. Like the
runtime, answers are cached for 10 s, misses are never cached, and `force` skips the cache.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from streams_k8s.api.contract import pe_host
from streams_k8s.naming.labels import LabelError, OperatorPortLabel, PePortLabel
from streams_k8s.naming.table import NameTable, NameTableError

CACHE_SECONDS = 10.0
# The runtime's curl timeout for REST lookups.
REST_TIMEOUT_SECONDS = 1.0

JobNameLookup = Callable[[int], Awaitable[str]]


class NameNotFound(LookupError):
    """A label that cannot be resolved now (it may resolve later: nothing is cached)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    pe_port: PePortLabel
    host: str
    port: int
    address: str | None = None

    def __str__(self) -> str:
        return f"{self.address or self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Resolution:
    label: str
    operator_port: OperatorPortLabel | None
    endpoint: Endpoint


def rest_job_name_lookup(api_url: str, session: aiohttp.ClientSession) -> JobNameLookup:
    """Job id → Job name through the instance operator's REST API (text/plain body, 200 only)."""

    async def lookup(job_id: int) -> str:
        url = f"{api_url.rstrip('/')}/api/state/job/by-id/{job_id}/name"
        try:
            async with session.get(
                url, timeout=aiohttp.ClientTimeout(total=REST_TIMEOUT_SECONDS)
            ) as response:
                if response.status != 200:
                    raise NameNotFound(f"job id {job_id}: {url} answered {response.status}")
                return (await response.text()).strip()
        except (aiohttp.ClientError, TimeoutError) as err:
            raise NameNotFound(f"job id {job_id}: {url} unreachable ({err or type(err).__name__})") from err

    return lookup


def fixed_job_name(name: str) -> JobNameLookup:
    """A lookup for tools that already know the job (every id resolves to `name`)."""

    async def lookup(job_id: int) -> str:
        return name

    return lookup


class Resolver:
    def __init__(
        self,
        *,
        table_path: Path,
        namespace: str,
        job_name: JobNameLookup,
        resolve_addresses: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._table_path = table_path
        self._namespace = namespace
        self._job_name = job_name
        self._resolve_addresses = resolve_addresses
        self._clock = clock
        self._table: tuple[float, NameTable] | None = None
        self._endpoints: dict[PePortLabel, tuple[float, Endpoint]] = {}

    def _fresh(self, stamp: float) -> bool:
        return self._clock() - stamp < CACHE_SECONDS

    def pe_port_of(self, label: OperatorPortLabel, *, force: bool = False) -> PePortLabel:
        """Look the operator port up in the table, re-reading the file when the cache is stale or misses."""
        if not force and self._table is not None and self._fresh(self._table[0]) and label in self._table[1]:
            return self._table[1][label]
        try:
            table = NameTable.parse(self._table_path.read_text(encoding="utf-8"))
        except (OSError, NameTableError) as err:
            raise NameNotFound(f"cannot resolve {label}: {err}") from err
        self._table = (self._clock(), table)
        if label not in table:
            raise NameNotFound(f"cannot resolve {label}: not in {self._table_path}")
        return table[label]

    async def endpoint_of(self, label: PePortLabel, *, force: bool = False) -> Endpoint:
        cached = self._endpoints.get(label)
        if not force and cached is not None and self._fresh(cached[0]):
            return cached[1]
        host = pe_host(await self._job_name(label.job_id), label.pe_id, self._namespace)
        address = await self._address_of(host) if self._resolve_addresses else None
        endpoint = Endpoint(pe_port=label, host=host, port=label.tcp_port, address=address)
        self._endpoints[label] = (self._clock(), endpoint)
        return endpoint

    async def _address_of(self, host: str) -> str:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, family=socket.AF_INET)
        except OSError as err:
            raise NameNotFound(f"cannot resolve {host}: {err}") from err
        # The runtime takes the first IPv4 address.
        return str(infos[0][4][0])

    async def resolve(self, label: str, *, force: bool = False) -> Resolution:
        """Resolve an operator port label (J.O.P) or a PE port label (E.I@J) to an endpoint."""
        try:
            if "@" in label:
                return Resolution(label, None, await self.endpoint_of(PePortLabel.parse(label), force=force))
            operator_port = OperatorPortLabel.parse(label)
        except LabelError as err:
            raise NameNotFound(str(err)) from err
        pe_port = self.pe_port_of(operator_port, force=force)
        return Resolution(label, operator_port, await self.endpoint_of(pe_port, force=force))
