"""Leader election on a coordination.k8s.io/v1 Lease (client-go's algorithm).

A candidate takes the Lease when it is free (no holder) or expired; expiry is judged by our own
clock, not the holder's timestamps, so clock skew between nodes does not matter: the holder
renewed after the last read that still showed the previous record, so the lease runs out
``leaseDurationSeconds`` after that read, and a candidate wakes at that moment rather than at its
next poll. A killed leader's Lease is thus taken within ``lease_duration`` of its last renewal
(safe: a leader that cannot renew stops leading after ``renew_deadline``, which is shorter by
more than a poll). The leader renews every ``retry_period``; if it cannot renew for
``renew_deadline`` it stops leading. Writes are conditional on resourceVersion, so two candidates
never both win. Releasing clears the holder so a successor takes over at once instead of after
the lease expires; every change of holder, a handover after a release too, counts in
``leaseTransitions`` (as client-go counts them).

A leader renews by writing the Lease it last wrote (one request; client-go's optimistic renewal),
and reads it first only when that write fails. A lost lease is one of two `LeaseLoss`es: another
holder was seen (deposed), or the API server let no renewal through in time (unanswered), after
which the holder may `regain` it: nobody else took it meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import UTC, datetime
from enum import Enum

from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.objects import Object

log = logging.getLogger(__name__)

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")


class LeaseLoss(Enum):
    """Why a leader stopped leading."""

    DEPOSED = "another holder was seen"
    UNANSWERED = "the API server let no renewal through"


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("leader election needs lease_duration > renew_deadline > retry_period > 0")
        self.client = client
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = asyncio.Event()
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) as last read
        self._observed_at = 0.0  # the read before the one that first showed it: renewed after this
        self._last_read = 0.0
        self._expires_at = 0.0  # when another holder's lease runs out, by our clock
        self._written: Object | None = None  # the Lease as this holder last wrote it
        metrics = metrics if metrics is not None else client.metrics
        self._m_leader = metrics.leader.labels(f"{namespace}/{name}")
        self._m_leader.set(0)

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def deposed(self) -> bool:
        """Another holder's live lease was the last one read."""
        holder = self._observed[0] if self._observed is not None else ""
        return bool(holder) and holder != self.identity and time.monotonic() < self._expires_at

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease."""
        await self._campaign(yield_to_another=False)

    async def regain(self) -> bool:
        """After an unanswered loss: True once the Lease is held again, False as soon as another
        holder's live lease is read (that one leads now)."""
        return await self._campaign(yield_to_another=True)

    async def _campaign(self, *, yield_to_another: bool) -> bool:
        while True:
            if await self._try_acquire_or_renew():
                break
            if yield_to_another and self.deposed:
                return False
            poll = self.retry_period * (1 + 0.2 * random.random())
            await asyncio.sleep(max(0.0, min(poll, self._expires_at - time.monotonic())))
        self.leading.set()
        self._m_leader.set(1)
        log.info("became leader of lease %s/%s as %s", self.namespace, self.name, self.identity)
        return True

    async def hold(self) -> LeaseLoss:
        """Renew until a renewal cannot succeed within ``renew_deadline``; then return why."""
        last_renewed = time.monotonic()
        try:
            while True:
                await asyncio.sleep(self.retry_period)
                remaining = self.renew_deadline - (time.monotonic() - last_renewed)
                try:
                    async with asyncio.timeout(max(remaining, 0.001)):
                        while True:
                            if await self._try_acquire_or_renew():
                                break
                            await asyncio.sleep(self.retry_period / 4)
                    last_renewed = time.monotonic()
                except TimeoutError:
                    loss = LeaseLoss.DEPOSED if self.deposed else LeaseLoss.UNANSWERED
                    log.error(
                        "lost leadership of lease %s/%s: no renewal within %.1fs (%s)",
                        self.namespace,
                        self.name,
                        self.renew_deadline,
                        loss.value,
                    )
                    return loss
        finally:
            self.leading.clear()
            self._m_leader.set(0)

    async def release(self) -> None:
        """Give the Lease up now (on shutdown), so a successor does not wait for it to expire."""
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=_micro_time(datetime.now(UTC)))
            lease["spec"] = spec
            await self.client.replace(LEASES, lease)
            log.info("released lease %s/%s", self.namespace, self.name)
        except ApiError as exc:
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, exc)
        finally:
            self.leading.clear()
            self._m_leader.set(0)

    async def _try_acquire_or_renew(self) -> bool:
        now = datetime.now(UTC)
        if self.is_leader and self._written is not None and await self._renew_as_written(now):
            return True
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except ApiError as exc:
            if not exc.not_found:
                log.warning("lease %s/%s unreadable: %s", self.namespace, self.name, exc)
                return False
            return await self._create(now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, str(spec.get("renewTime") or ""))
        read_at, previous_read = time.monotonic(), self._last_read or time.monotonic()
        self._last_read = read_at
        if record != self._observed:  # renewed since our previous read (or first seen now)
            self._observed, self._observed_at = record, previous_read
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        self._expires_at = self._observed_at + duration
        if holder and holder != self.identity and read_at < self._expires_at:
            return False  # someone else holds a live lease
        if holder != self.identity:  # a new holder: after an expiry or a release alike
            spec["acquireTime"] = _micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=max(1, round(self.lease_duration)),
            renewTime=_micro_time(now),
        )
        lease["spec"] = spec
        try:
            updated = await self.client.replace(LEASES, lease)
        except ApiError as exc:
            if not exc.conflict:
                log.warning("lease %s/%s update failed: %s", self.namespace, self.name, exc)
            return False
        self._remember(updated)
        return True

    async def _create(self, now: datetime) -> bool:
        lease: Object = {
            "apiVersion": LEASES.api_version,
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.lease_duration)),
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self._remember(await self.client.create(LEASES, lease))
        except ApiError as exc:
            if not exc.conflict:
                log.warning("lease %s/%s creation failed: %s", self.namespace, self.name, exc)
            return False
        return True

    async def _renew_as_written(self, now: datetime) -> bool:
        """Write the Lease as this holder last wrote it, renewed: no read first (a write another
        made since is refused by its resourceVersion, and the caller reads)."""
        assert self._written is not None
        lease = {**self._written, "spec": {**self._written["spec"], "renewTime": _micro_time(now)}}
        try:
            self._remember(await self.client.replace(LEASES, lease))
        except ApiError as exc:
            log.info(
                "lease %s/%s: renewal as last written failed (%s); reading it", self.namespace, self.name, exc
            )
            return False
        return True

    def _remember(self, lease: Object) -> None:
        self._written = lease
        spec = lease.get("spec") or {}
        self._observed = (spec.get("holderIdentity") or "", str(spec.get("renewTime") or ""))
        self._observed_at = self._last_read = time.monotonic()
