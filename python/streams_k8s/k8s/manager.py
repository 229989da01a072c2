"""The Manager: one object that runs informers, controllers, leader election and the HTTP servers.

Startup: connect, serve health/metrics, start every informer, wait for their caches, then (as
leader, when leader election is on) start the controllers. Every long-running task is supervised:
if one ends, liveness turns red and the manager shuts down with a failure exit code instead of
running half-blind. A leader whose renewals the API server does not let through pauses its
controllers and keeps serving until it holds the Lease again (`_lead`). Shutdown (SIGTERM/SIGINT
or ``stop``): controllers finish in-flight reconciles, Events still pending get the same grace to
be delivered, the Lease is released at once, then watches, servers and the client close.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Coroutine
from typing import Any

from streams_k8s.k8s.api_errors import ApiServerState, next_api_server_state
from streams_k8s.k8s.backoff import Backoff
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import Controller, Reconciler
from streams_k8s.k8s.events import EventRecorder
from streams_k8s.k8s.health import HealthServer
from streams_k8s.k8s.informer import Informer, Scope
from streams_k8s.k8s.leader import LeaderElector, LeaseLoss
from streams_k8s.k8s.loop_monitor import LoopMonitor
from streams_k8s.k8s.metrics import RuntimeMetrics
from streams_k8s.k8s.settings import RuntimeSettings

log = logging.getLogger(__name__)

API_STATE_PERIOD = 2.0  # seconds between looks at the API error rate

_InformerKey = tuple[Resource, Scope, str | None, str | None]


class LeadershipLost(Exception):
    """Another replica holds the Lease: this one stops (and comes back as a standby)."""


class Manager:
    def __init__(self, settings: RuntimeSettings | None = None, *, client: KubeClient | None = None) -> None:
        self.settings = settings if settings is not None else RuntimeSettings()
        self.metrics = client.metrics if client is not None else RuntimeMetrics()
        self._client = client
        self._owns_client = client is None
        self._informers: dict[_InformerKey, Informer] = {}
        self.controllers: list[Controller] = []
        self.leader: LeaderElector | None = None
        self.loop_monitor = LoopMonitor(self.metrics)
        self.health: HealthServer | None = None
        self.api_server = ApiServerState.ANSWERING  # stepped by `_follow_api_errors`
        self._stop = asyncio.Event()
        self._failure: str | None = None
        self._tasks: dict[asyncio.Task[Any], str] = {}
        self._controller_tasks: list[asyncio.Task[None]] = []
        self._recorders: list[EventRecorder] = []
        self._event_client: KubeClient | None = None

    @property
    def client(self) -> KubeClient:
        if self._client is None:
            raise RuntimeError("the manager is not connected yet: await manager.connect() first")
        return self._client

    async def connect(self) -> KubeClient:
        if self._client is None:
            s = self.settings
            self._client = await KubeClient.connect(
                s.kubeconfig,
                s.context,
                qps=s.qps,
                burst=s.burst,
                max_concurrency=s.max_concurrency,
                request_timeout=s.request_timeout,
                metrics=self.metrics,
            )
            self._client.errors.window = s.api_error_window
            self._client.errors.min_requests = s.api_error_min_requests
        return self._client

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        """The shared informer for this resource/scope (one watch however many controllers use it):
        of ``namespace``, else of the namespaces the settings watch."""
        scope: Scope = namespace or self.settings.watch_scope()
        key = (resource, scope, label_selector, field_selector)
        if key not in self._informers:
            s = self.settings
            self._informers[key] = Informer(
                self.client,
                resource,
                namespace=scope,
                label_selector=label_selector,
                field_selector=field_selector,
                page_size=s.page_size,
                watch_timeout=s.watch_timeout,
                inactivity_timeout=s.inactivity_timeout,
                backoff=Backoff(s.backoff_initial, s.backoff_max, reset_after=s.backoff_reset),
                metrics=self.metrics,
            )
        return self._informers[key]

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def controller(
        self, name: str, reconcile: Reconciler, *, workers: int = 1, timeout: float | None = None
    ) -> Controller:
        controller = Controller(name, reconcile, workers=workers, timeout=timeout, metrics=self.metrics)
        self.controllers.append(controller)
        return controller

    def idle(self) -> bool:
        """No controller has a key queued or being reconciled."""
        return all(c.queue.idle for c in self.controllers)

    def client_of_its_own(self) -> KubeClient:
        """The client with a rate limit of its own (qps and burst as the client's), as each client
        controller-runtime builds from one rest.Config has: for requests that are no controller's
        (Events, a server's answers to its callers), which must not spend the controllers' budget."""
        return self.client.with_rate_limit(self.settings.qps, self.settings.burst)

    def event_recorder(self, controller: str) -> EventRecorder:
        """A recorder whose Events have a rate limit of their own (`client_of_its_own`), as
        controller-runtime's recorders have a client of their own: a burst of Events (one per PE
        a 10% upgrade of 1,000 PEs replaces) never delays the controllers' writes behind it."""
        if self._event_client is None:
            self._event_client = self.client_of_its_own()
        recorder = EventRecorder(self._event_client, controller, self.settings.identity)
        self._recorders.append(recorder)
        return recorder

    # --- health ----------------------------------------------------------------------------

    def liveness(self) -> list[str]:
        problems = [self._failure] if self._failure else []
        budget = self.settings.watch_stale_budget
        problems += [
            f"watch {i.name} silent for {i.age():.0f}s (budget {budget:.0f}s)"
            for i in self._informers.values()
            if i.age() > budget
        ]
        if self.loop_monitor.stalled(self.settings.loop_lag_budget):
            problems.append(f"event loop stalled ({self.loop_monitor.worst_recent_lag:.1f}s late)")
        return problems

    def readiness(self) -> list[str]:
        """Whether this pod can serve what its Service carries (the PEs' REST API and bundle
        repository, answered from the caches): caches synced once, leading (when required), no
        failure. A failing API server or a silent watch is no reason: the caches still answer, and a
        pod out of the Service's endpoints would leave every PE without its API (`warnings`)."""
        problems = [f"cache {i.name} not synced" for i in self._informers.values() if not i.synced.is_set()]
        if self.settings.ready_requires_leader and self._standby():
            problems.append("not the leader")
        if self._failure:
            problems.append(self._failure)
        return problems

    def _standby(self) -> bool:
        """Not leading, and not a leader paused while it regains the Lease (`_regaining`)."""
        return self.leader is not None and not self.leader.is_leader and not self._regaining()

    def _regaining(self) -> bool:
        """It led, lost the Lease to an API server that let no renewal through, and has seen no
        other holder since: its controllers are paused (`_lead`), it still serves."""
        leader = self.leader
        return (
            leader is not None
            and bool(self._controller_tasks)
            and not leader.is_leader
            and not leader.deposed
        )

    def warnings(self) -> list[str]:
        """What is wrong around the operator but is no reason to stop serving (health answers say it)."""
        s = self.settings
        found = [
            f"watch {i.name} silent for {i.age():.0f}s (budget {s.watch_ready_budget:.0f}s)"
            for i in self._informers.values()
            if i.synced.is_set() and i.age() > s.watch_ready_budget
        ]
        if self._regaining():
            found.append("lease not renewed: controllers paused until it is held again")
        if self._client is not None and self.api_server is ApiServerState.FAILING:
            requests, failures = self._client.errors.counts()
            found.append(
                f"API server failing: {failures} of {requests} requests in the last "
                f"{s.api_error_window:.0f}s got no usable answer (budget {s.api_error_budget:.0%})"
            )
        return found

    async def _follow_api_errors(self) -> None:
        """Step the API server's state from the failed share of requests; log each change."""
        s = self.settings
        while True:
            await asyncio.sleep(API_STATE_PERIOD)
            ratio = self.client.errors.ratio()
            state = next_api_server_state(self.api_server, ratio, s.api_error_budget)
            if state is not self.api_server:
                requests, failures = self.client.errors.counts()
                level = logging.WARNING if state is ApiServerState.FAILING else logging.INFO
                log.log(
                    level,
                    "API server %s: %d of %d requests in the last %.0fs got no usable answer (budget %.0f%%)",
                    state.value,
                    failures,
                    requests,
                    s.api_error_window,
                    s.api_error_budget * 100,
                )
            self.api_server = state
            self.metrics.api_server_failing.set(state is ApiServerState.FAILING)

    # --- lifecycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask for a clean shutdown (what SIGTERM does)."""
        self._stop.set()

    def _supervise(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        self._tasks[asyncio.create_task(coro, name=what)] = what

    async def _until(self, awaitable: Awaitable[Any] | None = None) -> bool:
        """Wait for ``awaitable`` (or forever), a stop request, or a supervised task ending.

        Returns True only if ``awaitable`` finished first; records a failure if a task ended."""
        stop = asyncio.ensure_future(self._stop.wait())
        target = asyncio.ensure_future(awaitable) if awaitable is not None else None
        waiting: set[asyncio.Future[Any]] = {stop, *self._tasks}
        if target is not None:
            waiting.add(target)
        try:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if target is not None and not target.done():
                target.cancel()
        for task in done:
            if task in self._tasks:
                what = self._tasks[task]
                exc = task.exception() if not task.cancelled() else None
                self._failure = f"{what} stopped: {exc!r}" if exc else f"{what} stopped"
                log.error("supervised task ended: %s", self._failure, exc_info=exc)
                return False
        if target is not None and target in done:
            target.result()  # re-raise its failure (e.g. TimeoutError)
            return True
        return False

    async def _lead(self) -> None:
        """Lead while the Lease is held. Deposed (another holder seen), the manager stops; when the
        API server only let no renewal through, the controllers pause (another replica may take
        the Lease once it runs out) while the pod goes on serving from its caches, and resume
        once the Lease is held again: a restart would leave the PEs without their API until the
        caches synced again, through the same sick API server."""
        assert self.leader is not None
        await self.leader.acquire()
        self._start_controllers()
        loss = await self.leader.hold()
        while loss is LeaseLoss.UNANSWERED:
            for controller in self.controllers:
                controller.pause()
            log.warning("controllers paused until the lease is held again; serving from the caches meanwhile")
            if not await self.leader.regain():
                loss = LeaseLoss.DEPOSED
                break
            for controller in self.controllers:
                controller.resume()
            loss = await self.leader.hold()
        raise LeadershipLost(f"lease {self.leader.namespace}/{self.leader.name}: {loss.value}")

    def _start_controllers(self) -> None:
        for controller in self.controllers:
            task = asyncio.create_task(controller.run(), name=f"controller {controller.name}")
            self._controller_tasks.append(task)
            self._tasks[task] = f"controller {controller.name}"

    async def run(self, *, handle_signals: bool = True) -> int:
        """Run until stopped; 0 after a requested shutdown, 1 after a failure."""
        s = self.settings
        loop = asyncio.get_running_loop()
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        try:
            await self.connect()
            self.health = HealthServer(
                liveness=self.liveness,
                readiness=self.readiness,
                warnings=self.warnings,
                registry=self.metrics.registry,
                host=s.bind_address,
                health_port=s.health_port,
                metrics_port=s.metrics_port,
            )
            await self.health.start()
            log.info(
                "serving health on :%d and metrics on :%d", self.health.health_port, self.health.metrics_port
            )
            self._supervise(self.loop_monitor.run(), "event-loop monitor")
            self._supervise(self._follow_api_errors(), "API error rate")
            for informer in self._informers.values():
                self._supervise(informer.run(), f"watch {informer.name}")
            synced = asyncio.gather(*(i.synced.wait() for i in self._informers.values()))
            try:
                caches_ready = await self._until(asyncio.wait_for(synced, s.cache_sync_timeout))
            except TimeoutError:
                self._failure = f"caches not synced within {s.cache_sync_timeout:.0f}s"
                caches_ready = False
            if caches_ready:
                await self._reconcile_while_running()
        except Exception as exc:
            self._failure = f"manager failed: {exc!r}"
            log.error("manager failed: %s", exc, exc_info=exc)
        finally:
            await self._shutdown()
            if handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
        if self._failure:
            log.error("manager stopped after a failure: %s", self._failure)
            return 1
        log.info("manager stopped cleanly")
        return 0

    async def _reconcile_while_running(self) -> None:
        """Start the controllers (as leader when leader election is on) and wait for the end."""
        s = self.settings
        if s.leader_election:
            self.leader = LeaderElector(
                # its renewals never wait behind the controllers' requests (and their retries)
                self.client.with_own_lane(qps=5.0, burst=10, concurrency=2),
                s.effective_lease_namespace(),
                s.lease_name,
                s.identity,
                lease_duration=s.lease_duration,
                renew_deadline=s.renew_deadline,
                retry_period=s.retry_period,
                metrics=self.metrics,
            )
            self._supervise(self._lead(), "leader election")
        else:
            self._start_controllers()
        await self._until()

    async def _shutdown(self) -> None:
        await asyncio.gather(*(c.shutdown(self.settings.shutdown_grace) for c in self.controllers))
        await asyncio.gather(*(r.close(self.settings.shutdown_grace) for r in self._recorders))
        if self.leader is not None and self.leader.is_leader:
            await self.leader.release()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self.health is not None:
            await self.health.stop()
        if self._owns_client and self._client is not None:
            await self._client.close()
