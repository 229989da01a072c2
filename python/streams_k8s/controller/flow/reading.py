"""The operator's reading of its PEs' metrics, set up on a Manager: on the leader only (one replica
reads the PEs; the others serve no flow series), each job's shape from its kept plan."""

from __future__ import annotations

from collections.abc import Callable

from streams_k8s.app.flow import FlowShape, shape_of_plan
from streams_k8s.app.plan import Plan
from streams_k8s.controller.flow.exported import FlowCollector
from streams_k8s.controller.flow.readers import PrometheusReader
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.controller.flow.targets import pod_targets
from streams_k8s.controller.settings import OperatorSettings
from streams_k8s.k8s.informer import Informer
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey


def start_reading(
    manager: Manager,
    pods: Informer,
    plan_of: Callable[[ObjectKey], Plan | None],
    settings: OperatorSettings,
) -> FlowScraper | None:
    """Read the PE pods in ``pods`` as ``settings`` say (every ``flow_interval`` seconds, none for 0;
    at the addresses ``flow_pod_network`` maps, or from the Prometheus at ``flow_prometheus``) and
    serve the job series on the manager's registry; the scraper, to stop it and to show its flows."""
    if settings.flow_interval <= 0:
        return None
    shapes: dict[ObjectKey, tuple[Plan, FlowShape]] = {}

    def shape_of(key: ObjectKey) -> FlowShape | None:
        plan = plan_of(key)
        if plan is None:
            return None
        kept = shapes.get(key)
        if kept is None or kept[0] is not plan:  # a re-plan: its shape anew
            kept = shapes[key] = (plan, shape_of_plan(plan))
        return kept[1]

    def forget(jobs: set[ObjectKey]) -> None:
        for key in [k for k in shapes if k not in jobs]:
            del shapes[key]

    def leading() -> bool:
        return manager.leader is None or manager.leader.is_leader

    scraper = FlowScraper(
        pod_targets(pods, address=settings.flow_address()),
        interval=settings.flow_interval,
        reader=PrometheusReader(settings.flow_prometheus) if settings.flow_prometheus else None,
        shape_of=shape_of,
        should_read=leading,
        idle=manager.idle,
    )
    scraper.add_listener(forget)
    manager.metrics.registry.register(FlowCollector(scraper))
    scraper.start()
    return scraper
