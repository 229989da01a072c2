"""Job-level series of the PEs' metrics on the operator's ``/metrics`` (a Prometheus collector).

Names and labels are the Streams metric exporter's (``streams_operator_ip_nTuplesProcessed``
with ``instancename``, ``jobname``, ``operatorname``, ``inputportname``), so dashboards built on
it carry over; ``instancename`` is the namespace (a Kubernetes namespace is what a Streams
instance was). The cardinality is bounded: operators are summed over the channels of their
parallel regions (``operatorname`` is the logical name: a width change adds no series), at most
``max_operators`` logical operators per job are served (the rest are counted in
``streams_k8s_flow_operators_not_exported``), and nothing is kept for a job once its PEs are gone.
The derived figures (rates over the window, fill, congestion) are ``streams_k8s_flow_*`` gauges.
deploy/README.md, "Flow metrics", lists every series.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from streams_k8s.app.flow import JobFlow, OperatorFlow, PeState
from streams_k8s.app.flow_samples import PeSample
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.k8s.objects import ObjectKey

MAX_OPERATORS = 200
JOB = ["instancename", "jobname"]
OPERATOR = [*JOB, "operatorname"]


@dataclass(slots=True)
class _Totals:
    """One logical operator's counters and gauges summed over its channels' last readings."""

    processed: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    dropped: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    queued: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    queue_size: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    waits: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    submitted: dict[int, float] = field(default_factory=lambda: defaultdict(float))


def _totals(samples: dict[int, PeSample]) -> dict[str, _Totals]:
    found: dict[str, _Totals] = defaultdict(_Totals)
    for sample in samples.values():
        for key, port in sample.inputs.items():
            t = found[key.logical]
            t.processed[key.port] += port.processed
            t.dropped[key.port] += port.dropped
            t.queued[key.port] += port.queued
            t.queue_size[key.port] += port.queue_size
            t.waits[key.port] += port.enqueue_waits
        for key, submitted in sample.outputs.items():
            found[key.logical].submitted[key.port] += submitted
    return found


def _sum(values: list[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)


class FlowCollector(Collector):
    """Serves the scraper's last round (see the module docs); register it on the operator's registry."""

    def __init__(self, scraper: FlowScraper, max_operators: int = MAX_OPERATORS) -> None:
        self.scraper, self.max_operators = scraper, max_operators

    def _families(self) -> dict[str, GaugeMetricFamily]:
        """Long: one declaration per family, all in one place."""
        ip, op = [*OPERATOR, "inputportname"], [*OPERATOR, "outputportname"]
        g = GaugeMetricFamily  # the exporter served its counters as gauges: no `_total` suffix
        return {
            "processed": g("streams_operator_ip_nTuplesProcessed", "Tuples processed.", labels=ip),
            "dropped": g("streams_operator_ip_nTuplesDropped", "Tuples dropped.", labels=ip),
            "queued": g("streams_operator_ip_nTuplesQueued", "Tuples queued now.", labels=ip),
            "queue_size": g("streams_operator_ip_queueSize", "Queue size (0: no queue).", labels=ip),
            "waits": g("streams_operator_ip_nEnqueueWaits", "Waits to enqueue a tuple.", labels=ip),
            "submitted": g("streams_operator_op_nTuplesSubmitted", "Tuples submitted.", labels=op),
            "congestion": g(
                "streams_job_max_congestionFactor",
                "Highest congestion factor of the job's connections.",
                labels=JOB,
            ),
            "in": g("streams_k8s_flow_operator_tuples_in_per_second", "Tuples/s processed.", labels=OPERATOR),
            "out": g(
                "streams_k8s_flow_operator_tuples_out_per_second", "Tuples/s submitted.", labels=OPERATOR
            ),
            "drops": g("streams_k8s_flow_operator_drops_per_second", "Tuples/s dropped.", labels=OPERATOR),
            "fill": g(
                "streams_k8s_flow_operator_queue_fill_ratio",
                "Fullest channel's input queue (0-1).",
                labels=OPERATOR,
            ),
            "op_congestion": g(
                "streams_k8s_flow_operator_congestion_factor",
                "Highest congestion of its PEs' connections.",
                labels=OPERATOR,
            ),
            "stream": g(
                "streams_k8s_flow_stream_tuples_per_second", "Tuples/s on an output port's stream.", labels=op
            ),
            "region_in": g(
                "streams_k8s_flow_region_tuples_in_per_second",
                "Tuples/s into a parallel region.",
                labels=[*JOB, "region"],
            ),
            "region_out": g(
                "streams_k8s_flow_region_tuples_out_per_second",
                "Tuples/s out of a parallel region.",
                labels=[*JOB, "region"],
            ),
            "region_congestion": g(
                "streams_k8s_flow_region_congestion_factor",
                "Highest congestion in a parallel region.",
                labels=[*JOB, "region"],
            ),
            "pes": g("streams_k8s_flow_pes", "The job's PEs by reading state.", labels=[*JOB, "state"]),
            "not_exported": g(
                "streams_k8s_flow_operators_not_exported",
                "Logical operators over the per-job limit, not served.",
                labels=JOB,
            ),
        }

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        for job, flow in sorted(self.scraper.flows.items()):
            self._job(families, job, flow)
        counts = self.scraper.counts
        yield from families.values()
        yield CounterMetricFamily(
            "streams_k8s_flow_reads", "PE metric readings that succeeded.", counts.reads
        )
        yield CounterMetricFamily(
            "streams_k8s_flow_read_failures", "PE metric readings that failed.", counts.failures
        )
        yield GaugeMetricFamily(
            "streams_k8s_flow_round_seconds",
            "Duration of the last round of readings, its waits for the controllers included.",
            counts.last_round_seconds,
        )

    def _job(self, families: dict[str, GaugeMetricFamily], job: ObjectKey, flow: JobFlow) -> None:
        ids = [job.namespace, job.name]
        totals = _totals(self.scraper.last_samples(job))
        by_logical: dict[str, list[OperatorFlow]] = defaultdict(list)
        for op in flow.operators:
            by_logical[op.logical].append(op)
        names = sorted(totals)
        kept = names[: self.max_operators]
        for name in kept:
            self._operator(families, [*ids, name], totals[name], by_logical.get(name, []))
        families["not_exported"].add_metric(ids, len(names) - len(kept))
        links = list(flow.links.values())
        if links:
            families["congestion"].add_metric(ids, max(links))
        for region in flow.regions:
            for family, value in (
                ("region_in", region.tuples_in),
                ("region_out", region.tuples_out),
                ("region_congestion", region.congestion),
            ):
                if value is not None:
                    families[family].add_metric([*ids, region.region], value)
        for state in PeState:
            families["pes"].add_metric([*ids, state.value], sum(1 for s in flow.pes.values() if s is state))

    @staticmethod
    def _operator(
        families: dict[str, GaugeMetricFamily], labels: list[str], t: _Totals, channels: list[OperatorFlow]
    ) -> None:
        for family in ("processed", "dropped", "queued", "queue_size", "waits", "submitted"):
            for port, value in sorted(getattr(t, family).items()):
                families[family].add_metric([*labels, str(port)], value)
        if not channels:
            return  # read once only: no rates yet
        derived = {
            "in": _sum([c.tuples_in for c in channels]),
            "out": _sum([c.tuples_out for c in channels]),
            "drops": _sum([c.drops for c in channels]),
            "fill": max((c.queue_fill for c in channels if c.queue_fill is not None), default=None),
            "op_congestion": max((c.congestion for c in channels if c.congestion is not None), default=None),
        }
        for family, value in derived.items():
            if value is not None:
                families[family].add_metric(labels, value)
        for port in sorted(t.submitted):
            rate = _sum([c.outputs.get(port) for c in channels])
            if rate is not None:
                families["stream"].add_metric([*labels, str(port)], rate)
