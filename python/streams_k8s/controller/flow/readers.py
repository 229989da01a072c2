"""Where a round of PE readings comes from: each PE pod's metrics port (`PodReader`, the default)
or a Prometheus that already scrapes them (`PrometheusReader`, one query a round).

A reader answers each target with a reading (when it was taken, the sample) or why it has none; a
target it has nothing about (Prometheus has not scraped the pod yet) is left out: the PE stays
pending, not failing. It awaits ``turn`` before each request it sends (`k8s.idle_turn`: the
scraper's readers give way to the controllers).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import aiohttp
import orjson

from streams_k8s.app.flow_samples import FAMILIES, ExpositionError, PeSample, parse_exposition, record
from streams_k8s.controller.flow.targets import Target
from streams_k8s.k8s.idle_turn import Turn, now
from streams_k8s.k8s.objects import ObjectKey

PeRef = tuple[ObjectKey, int]
Reading = tuple[float, PeSample] | str  # (when, what was read) or why nothing was


class Reader(Protocol):
    async def read(self, targets: Sequence[Target], turn: Turn = now) -> dict[PeRef, Reading]: ...

    async def close(self) -> None: ...


class _Session:
    """One aiohttp session, made when first needed (a reader may be built outside a loop)."""

    def __init__(self, limit: int, timeout: float) -> None:
        self.limit, self.timeout = limit, timeout
        self._session: aiohttp.ClientSession | None = None

    def get(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.limit),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class PodReader:
    """GETs each target's URL, at most ``concurrency`` at a time, each within ``timeout``."""

    def __init__(
        self, *, concurrency: int = 64, timeout: float = 2.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._session, self._gate, self._clock = _Session(concurrency, timeout), concurrency, clock

    async def _one(self, target: Target, gate: asyncio.Semaphore, turn: Turn) -> Reading:
        assert target.url is not None
        async with gate:
            await turn()
            try:
                async with self._session.get().get(target.url) as response:
                    if response.status != 200:
                        return f"{target.url}: HTTP {response.status}"
                    text = await response.text()
                return self._clock(), parse_exposition(text)
            except (aiohttp.ClientError, TimeoutError, ExpositionError, UnicodeDecodeError) as err:
                return f"{target.url}: {err or type(err).__name__}"

    async def read(self, targets: Sequence[Target], turn: Turn = now) -> dict[PeRef, Reading]:
        gate = asyncio.Semaphore(self._gate)
        wanted = [t for t in targets if t.url is not None]
        found = await asyncio.gather(*(self._one(t, gate, turn) for t in wanted))
        return {(t.job, t.pe): reading for t, reading in zip(wanted, found, strict=True)}

    async def close(self) -> None:
        await self._session.close()


class PrometheusReader:
    """One instant query a round for the families read (``/api/v1/query``), matched to the PE
    pods by the ``namespace`` and ``pod`` labels Prometheus gives what it scrapes in Kubernetes
    (a ServiceMonitor's or PodMonitor's defaults; others by ``namespace_label``/``pod_label``).
    Each PE's reading is as of its newest sample; Prometheus unreachable or refusing fails every
    PE with its answer."""

    def __init__(
        self, url: str, *, timeout: float = 5.0, namespace_label: str = "namespace", pod_label: str = "pod"
    ) -> None:
        self.url = url.rstrip("/") + "/api/v1/query"
        self._session = _Session(4, timeout)
        self.namespace_label, self.pod_label = namespace_label, pod_label

    def _query(self, namespaces: set[str]) -> str:
        names = "|".join(sorted(FAMILIES))
        within = "|".join(sorted(namespaces))
        return f'{{__name__=~"({names})(_total)?",{self.namespace_label}=~"{within}",{self.pod_label}!=""}}'

    async def _series(self, namespaces: set[str]) -> list[dict[str, Any]]:
        session = self._session.get()
        async with session.post(self.url, data={"query": self._query(namespaces)}) as response:
            body = orjson.loads(await response.read())
            if response.status != 200 or body.get("status") != "success":
                raise ExpositionError(f"{self.url}: HTTP {response.status}: {body.get('error') or body}")
        result = (body.get("data") or {}).get("result")
        if not isinstance(result, list):
            raise ExpositionError(f"{self.url}: no vector in the answer")
        return result

    async def read(self, targets: Sequence[Target], turn: Turn = now) -> dict[PeRef, Reading]:
        by_pod = {(t.job.namespace, t.pod): (t.job, t.pe) for t in targets if t.pod and t.url is not None}
        if not by_pod:
            return {}
        await turn()
        try:
            series = await self._series({namespace for namespace, _ in by_pod})
        except (aiohttp.ClientError, TimeoutError, ExpositionError, orjson.JSONDecodeError) as err:
            return dict.fromkeys(by_pod.values(), f"{self.url}: {err or type(err).__name__}")
        samples: dict[PeRef, PeSample] = defaultdict(PeSample)
        newest: dict[PeRef, float] = defaultdict(float)
        problems: dict[PeRef, str] = {}
        for one in series:
            labels = {str(k): str(v) for k, v in (one.get("metric") or {}).items()}
            ref = by_pod.get((labels.get(self.namespace_label, ""), labels.get(self.pod_label, "")))
            name = labels.get("__name__", "")
            if ref is None or ref in problems or name.removesuffix("_total") not in FAMILIES:
                continue
            try:
                at, value = one["value"]
                record(samples[ref], name, labels, float(value), str(labels))
                newest[ref] = max(newest[ref], float(at))
            except (KeyError, TypeError, ValueError, ExpositionError) as err:
                problems[ref] = f"{self.url}: {err}"
        return {**{ref: (newest[ref], sample) for ref, sample in samples.items()}, **problems}

    async def close(self) -> None:
        await self._session.close()
