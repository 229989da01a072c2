"""Prometheus metric families of the controller runtime.

Each Manager owns one registry, so two managers in one process (tests, benchmarks) never share
counters. Names follow controller-runtime's where one exists, under the ``streams_k8s_`` prefix.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class RuntimeMetrics:
    """Every metric family the runtime reports, registered in one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        """Every metric of the runtime, declared in ``registry`` (a fresh one by default).

        Long: one declaration per metric, all in one place.
        """
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.reconcile_total = Counter(
            "streams_k8s_reconcile_total",
            "Reconciles by controller and result (success, requeue, conflict, error).",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "streams_k8s_reconcile_errors_total",
            "Reconciles that raised, by controller.",
            ["controller"],
            registry=r,
        )
        self.reconcile_duration = Histogram(
            "streams_k8s_reconcile_duration_seconds",
            "Time spent in one reconcile, by controller.",
            ["controller"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge(
            "streams_k8s_workqueue_depth", "Keys waiting in the queue.", ["name"], registry=r
        )
        self.queue_adds = Counter(
            "streams_k8s_workqueue_adds_total", "Keys added to the queue.", ["name"], registry=r
        )
        self.queue_retries = Counter(
            "streams_k8s_workqueue_retries_total",
            "Rate-limited re-adds after a failure or a conflict.",
            ["name"],
            registry=r,
        )
        self.queue_latency = Histogram(
            "streams_k8s_workqueue_queue_duration_seconds",
            "Time a key waits in the queue before a worker takes it.",
            ["name"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.api_requests = Counter(
            "streams_k8s_api_requests_total",
            "Kubernetes API requests by verb, resource and HTTP code (0 = no answer).",
            ["verb", "resource", "code"],
            registry=r,
        )
        self.api_latency = Histogram(
            "streams_k8s_api_request_duration_seconds",
            "Kubernetes API request latency (to the response headers) by verb and resource.",
            ["verb", "resource"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.api_error_ratio = Gauge(
            "streams_k8s_api_error_ratio",
            "Share of API requests that got no usable answer (none, 429, 5xx) over the last minute.",
            registry=r,
        )
        self.api_server_failing = Gauge(
            "streams_k8s_api_server_failing",
            "1 while the API server counts as failing (the error ratio reached its budget), else 0.",
            registry=r,
        )
        self.watch_last_event_age = Gauge(
            "streams_k8s_watch_last_event_age_seconds",
            "Seconds since a watch last received an event, a bookmark, a list or a clean end.",
            ["watch"],
            registry=r,
        )
        self.watch_events = Counter(
            "streams_k8s_watch_events_total", "Watch events received, by type.", ["watch", "type"], registry=r
        )
        self.watch_relists = Counter(
            "streams_k8s_watch_relists_total", "Full lists done by a watch.", ["watch"], registry=r
        )
        self.watch_errors = Counter(
            "streams_k8s_watch_errors_total",
            "Watch failures by reason (gone, stalled, http, connection, decode).",
            ["watch", "reason"],
            registry=r,
        )
        self.loop_lag = Gauge(
            "streams_k8s_event_loop_lag_seconds", "Last measured event-loop scheduling lag.", registry=r
        )
        self.leader = Gauge(
            "streams_k8s_leader",
            "1 while this process holds the leader Lease, else 0.",
            ["lease"],
            registry=r,
        )
        self.events_emitted = Counter(
            "streams_k8s_events_total",
            "Kubernetes Events recorded, by outcome (created, aggregated, queued to retry, dropped, failed).",
            ["outcome"],
            registry=r,
        )
