"""The simulated PE runtime: what the Streams PE container would tell the controller.

Each Running and Ready pod labelled `app=streams, svc=pe` is a started PE. Like the runtime's
connectivity thread, it knows its static connections from its AADL (the ConfigMap mounted at
`/etc/config/pe`), resolves each as the runtime's name service does, and reports the state of all
of them:
- an output connection's receiver is looked up in the job's name table (the ConfigMap mounted at
  `/etc/config/job`; operator port label -> PE port label, the AADL's label when absent), then the
  PE port `E.I@J` is the headless Service `<job>-E`, whose EndpointSlices give the first ready
  address; the connection is up when a started PE with that address listens on `10000 + I`;
- an input connection is up when the sending PE is started and this PE's own Service resolves
  to this pod (the sender resolves it the same way).
`Full` when every connection is up (or there is none), `None` when none is, `Partial` otherwise.
The state is evaluated `connect_delay` after the PE starts and after each change of a Service, an
EndpointSlice or the entries of a name table it depends on, or of a PE it talks to (the runtime
retries a connection every 100 ms), and reported when it changes (the controller's starting value
is `None`): `PUT {controller}/api/state/job/{job}/pe/{pe}/connectivity` with the JSON string body,
retried while the controller fails. The job and PE id come from the `streams.ibm.com/job` /
`streams.ibm.com/pe` labels (or the STREAMS_JOB_NAME / STREAMS_PE_ID env). A pod with no AADL
mounted has no static connections. What it resolves and reports is written to the container's
log (`kubectl logs`).

It reads the cluster through informers (pods bound to the simulated nodes, Services,
EndpointSlices, ConfigMaps) of whichever API server the simulation runs against. Its calls are the
pod's (`pod_calls`): through cluster DNS, presenting a token bound to the pod, which a server that
trusts PE pods (the instance API's and the coordinator's write guard) accepts as it accepts a
write from the pod's address.

The reporter is pluggable (any async callable), and `RuntimeHooks` (`pe_hooks`) is where further
behaviour attaches: the runtime calls `pe_started` / `pe_stopped`; `consistent_region`'s
`ConsistentRegionParticipant` is the hook that answers consistent-region drains and resets.
"""

from __future__ import annotations

import logging
from typing import Any

from streams_k8s.api.contract import (
    AADL_KEY,
    JOB_CONFIG_DIR,
    JOB_LABEL,
    LAUNCH_COUNT_LABEL,
    NAME_TABLE_KEY,
    PE_CONFIG_DIR,
    PE_LABEL,
    PE_PORT_BASE,
    pe_service_name,
)
from streams_k8s.k8s.informer import EventType, Informer
from streams_k8s.k8s.objects import Object, ObjectKey, meta
from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.pe_hooks import HttpConnectivityReporter, Reporter, RuntimeHooks
from streams_k8s.sandbox.cluster.pe_identity import PeIdentity, identify, is_pe_pod, is_ready
from streams_k8s.sandbox.cluster.pe_wiring import (
    PePort,
    Wiring,
    WiringError,
    entries_changed,
    mounted_config_map,
    parse_aadl,
    parse_name_table,
)
from streams_k8s.sandbox.cluster.pod_calls import PodCalls
from streams_k8s.sandbox.cluster.running_pe import (
    NONE,
    ConfigMapKey,
    PeKey,
    PodKey,
    RunningPe,
    ServiceKey,
    connectivity,
    file_under,
)
from streams_k8s.sandbox.cluster.service_endpoints import ServiceEndpoints
from streams_k8s.sandbox.worker import Worker

log = logging.getLogger(__name__)


class SimulatedPeRuntime:
    def __init__(
        self,
        pods: Informer,
        services: Informer,
        configmaps: Informer,
        endpoints: ServiceEndpoints,
        reporter: Reporter | None,
        logs: ContainerLog,
        *,
        calls: PodCalls | None = None,
        hooks: RuntimeHooks | None = None,
        retry_interval: float = 1.0,
        connect_delay: float = 0.1,
    ) -> None:
        self.pods, self.services, self.configmaps = pods.store, services.store, configmaps.store
        self.endpoints = endpoints
        self.reporter = reporter
        self.calls = calls or PodCalls()
        self.hooks = hooks or RuntimeHooks()
        self.logs = logs
        self.hooks.logs = self.logs
        self.hooks.calls = self.calls
        self.retry_interval = retry_interval
        self.connect_delay = connect_delay
        self.worker: Worker[PodKey] = Worker("pe-runtime", self._sync)
        self.running: dict[str, RunningPe] = {}  # pod uid -> the started PE
        self.failures: list[tuple[PeIdentity, str]] = []
        self._stopped: list[PeIdentity] = []
        self._due: set[PodKey] = set()  # PEs with an evaluation scheduled
        # What resolution reads, indexed so each change re-evaluates only the PEs it concerns.
        self._by_ip: dict[str, str] = {}  # pod IP -> uid of the started PE
        self._by_pe: dict[PeKey, set[str]] = {}  # started pods of each PE
        self._on_service: dict[ServiceKey, set[str]] = {}
        self._on_sender: dict[PeKey, set[str]] = {}
        self._on_table: dict[ConfigMapKey, set[str]] = {}
        pods.add_handler(self._on_pod)
        services.add_handler(self._on_service_event)
        configmaps.add_handler(self._on_config_map)
        endpoints.subscribe(lambda key: self._queue(self._on_service.get(key)))

    # -- what changes -------------------------------------------------------------------------------

    def _on_service_event(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        obj = new if new is not None else old
        if obj is not None:
            self._queue(self._on_service.get((meta(obj).get("namespace", ""), meta(obj).get("name", ""))))

    def _on_config_map(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        obj = new if new is not None else old
        if obj is not None and entries_changed(old, new):
            self._queue(self._on_table.get((meta(obj).get("namespace", ""), meta(obj).get("name", ""))))

    def _on_pod(self, kind: EventType, old: Object | None, new: Object | None) -> None:
        pod = new if new is not None else old
        if pod is None or not is_pe_pod(pod):
            return
        m = pod["metadata"]
        key = (m["namespace"], m["name"])
        if kind == "delete" or not is_ready(pod):
            pe = self.running.pop(m["uid"], None)
            if pe is not None:
                self._forget(pe)
                self._stopped.append(pe.identity)
                self.worker.add(key)  # the hooks hear of it
        elif m["uid"] not in self.running:
            self.worker.add(key)  # it starts

    def _queue(self, uids: set[str] | None) -> None:
        for uid in list(uids or ()):
            pe = self.running.get(uid)
            if pe is not None:
                self._schedule(pe, self.connect_delay)

    def _schedule(self, pe: RunningPe, delay: float) -> None:
        """Evaluate (and report) `pe` after `delay`; changes meanwhile join that evaluation."""
        if pe.key not in self._due:
            self._due.add(pe.key)
            self.worker.later(delay, pe.key)

    def _forget(self, pe: RunningPe) -> None:
        """A PE stopped: out of every index; those that talk to it look again."""
        uid = pe.identity.uid
        if self._by_ip.get(pe.identity.address) == uid:
            del self._by_ip[pe.identity.address]
        file_under(self._by_pe, set(), {self._pe_key(pe)}, uid)
        file_under(self._on_service, set(), pe.services, uid)
        file_under(self._on_sender, set(), pe.senders, uid)
        if pe.table_map is not None:
            file_under(self._on_table, set(), {(pe.identity.namespace, pe.table_map)}, uid)
        self._queue(self._on_sender.get(self._pe_key(pe)))
        self._queue(self._on_service.get(self._own_service(pe)))

    @staticmethod
    def _pe_key(pe: RunningPe) -> PeKey:
        return (pe.identity.namespace, pe.identity.job, pe.identity.pe)

    @staticmethod
    def _own_service(pe: RunningPe) -> ServiceKey:
        return (pe.identity.namespace, pe_service_name(pe.job_name, pe.identity.pe))

    async def report_to(self, controller_url: str | None) -> None:
        """Report to this controller REST API from now on (None: stop reporting); PEs already
        running report to it too, as the runtime retries until the controller answers."""
        self.reporter = HttpConnectivityReporter(controller_url, self.calls) if controller_url else None
        for pe in self.running.values():
            pe.reported = NONE  # a new controller has heard nothing yet
            self._schedule(pe, 0.0)

    # -- one PE -----------------------------------------------------------------------------------

    async def _sync(self, key: PodKey) -> None:
        while self._stopped:
            await self.hooks.pe_stopped(self._stopped.pop(0))
        due = key in self._due
        self._due.discard(key)
        pod = self.pods.get(ObjectKey(*key))
        if pod is None or not is_ready(pod):
            return
        pe = self.running.get(pod["metadata"]["uid"])
        if pe is None:
            identity = identify(pod)
            if identity is None:
                log.warning(
                    "PE pod %s/%s has no %s/%s labels: connectivity not reported", *key, JOB_LABEL, PE_LABEL
                )
                return
            pe = self._start(pod, identity)
            await self.hooks.pe_started(identity, pod)
            # With no static connection the runtime reports Full at once; else once it connects.
            self._schedule(
                pe, self.connect_delay if pe.wiring and (pe.wiring.inputs or pe.wiring.outputs) else 0
            )
            return
        if not due:
            return
        self._evaluate(pe)
        if (
            self.reporter is not None
            and pe.state is not None
            and pe.state != pe.reported
            and not pe.reporting
        ):
            pe.reporting = True
            self.worker.spawn(self._report(self.reporter, pe, pe.state))  # every PE reports on its own

    def _start(self, pod: dict[str, Any], identity: PeIdentity) -> RunningPe:
        ns = identity.namespace
        wiring: Wiring | None = None
        aadl_map = mounted_config_map(pod, PE_CONFIG_DIR)
        problem = ""
        if aadl_map is not None:
            config = self.configmaps.get(ObjectKey(ns, aadl_map))
            try:
                if config is None or AADL_KEY not in (config.get("data") or {}):
                    raise WiringError(f"ConfigMap {aadl_map} has no {AADL_KEY}")
                wiring = parse_aadl(config["data"][AADL_KEY])
            except WiringError as err:
                problem = f"cannot load {PE_CONFIG_DIR}/{AADL_KEY} ({err}): no static connections known"
        pe = RunningPe(identity, wiring, mounted_config_map(pod, JOB_CONFIG_DIR))
        self.running[identity.uid] = pe
        if pe.identity.address:
            self._by_ip[pe.identity.address] = identity.uid
        file_under(self._by_pe, {self._pe_key(pe)}, set(), identity.uid)
        if pe.table_map is not None:
            file_under(self._on_table, {(ns, pe.table_map)}, set(), identity.uid)
        if wiring is None:
            pe.log(
                self.logs, problem or f"started; no AADL mounted at {PE_CONFIG_DIR}: no static connections"
            )
        else:
            launch = (pod["metadata"].get("labels") or {}).get(LAUNCH_COUNT_LABEL, "?")
            pe.log(
                self.logs,
                f"started (launch {launch}): {len(wiring.outputs)} output and {len(wiring.inputs)} input "
                f"static connections; name table from ConfigMap {pe.table_map}",
            )
        # Those that send to it or receive from it may connect now.
        self._queue(self._on_sender.get(self._pe_key(pe)))
        self._queue(self._on_service.get(self._own_service(pe)))
        return pe

    def _name_table(self, pe: RunningPe) -> dict[str, PePort]:
        problem = ""
        table: dict[str, PePort] = {}
        if pe.table_map is None:
            problem = f"no name table mounted at {JOB_CONFIG_DIR}"
        else:
            config = self.configmaps.get(ObjectKey(pe.identity.namespace, pe.table_map))
            text = ((config or {}).get("data") or {}).get(NAME_TABLE_KEY)
            if text is None:
                problem = f"ConfigMap {pe.table_map} has no {NAME_TABLE_KEY}"
            else:
                try:
                    table = parse_name_table(text)
                except WiringError as err:
                    problem = str(err)
        if problem != pe.table_problem:
            pe.table_problem = problem
            if problem:
                pe.log(self.logs, f"name table unreadable ({problem}): the AADL's PE ports are used")
        return table

    def _resolve(self, ns: str, service_name: str, tcp_port: int) -> tuple[str | None, str]:
        """The address a PE port's Service resolves to (first ready endpoint), or why none."""
        service = self.services.get(ObjectKey(ns, service_name))
        if service is None:
            return None, f"Service {service_name} not found"
        ready = self.endpoints.ready(ns, service_name)
        if not ready:
            return None, f"Service {service_name} has no ready endpoint"
        spec = service.get("spec") or {}
        if spec.get("clusterIP") not in (None, "None") and tcp_port not in {
            p.get("port") for p in spec.get("ports") or []
        }:
            return None, f"Service {service_name} has no port {tcp_port}"
        return ready[0], ""

    def _links(self, pe: RunningPe, wiring: Wiring) -> dict[str, tuple[bool, str]]:
        """Each static connection: whether it is up, and what resolving it found."""
        ns = pe.identity.namespace
        links: dict[str, tuple[bool, str]] = {}
        services: set[ServiceKey] = set()
        senders: set[PeKey] = set()
        table = self._name_table(pe) if wiring.outputs else {}
        for out in wiring.outputs:
            label = table.get(out.operator_port, out.receiver)
            name = f"output to {label} (operator port {out.operator_port})"
            if label.job != wiring.job_id:
                links[name] = (False, f"job id {label.job} is not this job's ({wiring.job_id})")
                continue
            service_name = pe_service_name(pe.job_name, label.pe)
            services.add((ns, service_name))
            address, why = self._resolve(ns, service_name, label.tcp_port)
            target = self.running.get(self._by_ip.get(address or "", ""))
            if address is None:
                links[name] = (False, why)
            elif target is None or target.wiring is None or label.port not in target.wiring.input_ports:
                links[name] = (False, f"{service_name} -> {address}: nothing listens on {label.tcp_port}")
            else:
                links[name] = (True, f"{service_name}.{ns} -> {address}:{label.tcp_port} connected")
        if wiring.inputs:
            own = self._own_service(pe)
            services.add(own)
            address, why = self._resolve(ns, own[1], PE_PORT_BASE)
            for inp in wiring.inputs:
                sender = (ns, pe.identity.job, str(inp.sender))
                senders.add(sender)
                name = f"input port {inp.port} from pe {inp.sender}"
                if not self._by_pe.get(sender):
                    links[name] = (False, f"pe {inp.sender} is not running")
                elif address != pe.identity.address:
                    unreachable = (
                        why or f"{own[1]} resolves to {address}, not to this pod ({pe.identity.address})"
                    )
                    links[name] = (False, f"pe {inp.sender} cannot reach this PE: {unreachable}")
                else:
                    links[name] = (True, "connected")
        uid = pe.identity.uid
        file_under(self._on_service, services, pe.services, uid)
        file_under(self._on_sender, senders, pe.senders, uid)
        pe.services, pe.senders = services, senders
        return links

    def _evaluate(self, pe: RunningPe) -> None:
        links = self._links(pe, pe.wiring) if pe.wiring is not None else {}
        for name, (_, text) in links.items():
            if pe.links.get(name) != text:
                pe.log(self.logs, f"{name}: {text}")
        pe.links = {name: text for name, (_, text) in links.items()}
        state = connectivity([up for up, _ in links.values()])
        if state != pe.state:
            pe.state = state
            pe.log(self.logs, f"connectivity {state}")

    async def _report(self, reporter: Reporter, pe: RunningPe, state: str) -> None:
        try:
            await reporter(pe.identity, state)
        except Exception as exc:  # an unreachable controller is retried, as by the real runtime
            self.failures.append((pe.identity, str(exc)))
            pe.reported = None  # it may land still (a lost answer): what the controller holds is unknown
            if not pe.failing:
                pe.log(self.logs, f"connectivity {state} not accepted, retrying: {exc}")
            pe.failing = True
            self._schedule(pe, self.retry_interval)
            return
        finally:
            pe.reporting = False
        pe.failing = False
        pe.reported = state
        pe.log(self.logs, f"connectivity {state} reported to the controller")
        if pe.state != state and pe.identity.uid in self.running:  # it changed meanwhile
            self._schedule(pe, 0.0)

    async def close(self) -> None:
        await self.hooks.close()
        await self.calls.close()
