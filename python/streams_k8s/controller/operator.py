"""The instance operator: what `streams-k8s run` runs by default (entry point `streams_k8s.controllers`).

`setup(manager)` declares the controllers on the Manager and starts the servers PE pods talk to:
the REST API (port 10000; users upload bundles there too) and the bundle repository (redis
protocol, port 6379), where the runtime settings say (`bind_address`, `api_port`,
`repository_port`: `run --help`). Settings beyond the runtime's come from the environment
(`controller.settings`).

Every replica serves; the `streams-api` Service routes only to the pod labelled
`streams.ibm.com/serving=true`. The leader puts that label on its own pod (`POD_NAME`) and takes
it off the others, so PEs reach the replica whose job controller fetched the bundles.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from streams_k8s.api.contract import pe_host
from streams_k8s.controller.autoscaling.controller import JobAutoscalerController
from streams_k8s.controller.autoscaling.reading import flow_reader
from streams_k8s.controller.bundles.fetch import BundleCache, BundleFetcher, DataReader
from streams_k8s.controller.bundles.repository import BundleRepository, namespace_by_pod, pinned_by_pod
from streams_k8s.controller.bundles.upload_api import BundleUploadApi
from streams_k8s.controller.bundles.uploads import UploadedBundles
from streams_k8s.controller.coordinators import (
    CoordinatorObjectsController,
    CoordinatorObjectSettings,
    network_policies_served,
)
from streams_k8s.controller.flow.reading import start_reading
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.controller.jobs.controller import JobController
from streams_k8s.controller.jobs.milestones import JobMilestones
from streams_k8s.controller.pes.controller import PeController
from streams_k8s.controller.placement.nodes import NodePlacementController
from streams_k8s.controller.pubsub.api import SubscriptionApi
from streams_k8s.controller.pubsub.broker import SubscriptionBroker
from streams_k8s.controller.pubsub.datagrams import PeDatagrams
from streams_k8s.controller.rest.api import InstanceRestApi
from streams_k8s.controller.rest.caller_scope import CallerScope
from streams_k8s.controller.settings import OperatorSettings
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.controller import Requeue
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, PODS, SECRETS
from streams_k8s.k8s.manager import Manager
from streams_k8s.k8s.objects import ObjectKey, meta
from streams_k8s.k8s.pod_addresses import PodsByAddress
from streams_k8s.k8s.reviews import AccessReviewer, TokenReviewer

log = logging.getLogger(__name__)

SERVING_LABEL = "streams.ibm.com/serving"
OPERATOR_POD_SELECTOR = "app.kubernetes.io/name=streams-k8s-operator"
OPERATOR_CONTAINER = "controller"  # deploy/deployment.yaml


def data_reader(client: KubeClient, resource: Resource) -> DataReader:
    async def read(namespace: str, name: str) -> Mapping[str, str]:
        try:
            obj = await client.get(resource, name, namespace)
        except ApiError as err:
            if err.not_found:
                raise KeyError(name) from None
            raise
        return dict(obj.get("data") or {})

    return read


@dataclass
class InstanceOperator:
    """The running pieces, so an embedding (tests, the sandbox demo) can stop the servers."""

    jobs: JobController
    pes: PeController
    placement: NodePlacementController
    rest: InstanceRestApi
    repository: BundleRepository
    runner: web.AppRunner
    broker: SubscriptionBroker | None = None
    api_port: int = 0
    flow: FlowScraper | None = None  # the PEs' metrics, read while this replica leads
    _sessions: list[aiohttp.ClientSession] = field(default_factory=list)
    autoscalers: JobAutoscalerController | None = None

    def retained(self) -> dict[str, int]:
        """What the controllers keep per Job, PE or pod, by cache: all 0 once every Job is gone
        (the informers' caches follow the cluster; nothing else outlives a Job)."""
        return {**self.jobs.retained(), **self.pes.retained(), **self.placement.retained()}

    async def stop(self) -> None:
        await self.runner.cleanup()
        await self.repository.stop()
        if self.flow is not None:
            await self.flow.stop()
        if self.broker is not None:
            self.broker.datagrams.close()
        for session in self._sessions:
            await session.close()


async def own_image(client: KubeClient, pod_name: str, namespace: str) -> str | None:
    """The image this replica runs: its pod's ``controller`` container (else its only one)."""
    try:
        pod = await client.get(PODS, pod_name, namespace)
    except ApiError as err:
        log.warning("cannot read this operator's pod %s/%s for its image: %s", namespace, pod_name, err)
        return None
    containers = (pod.get("spec") or {}).get("containers") or []
    mine = [c for c in containers if c.get("name") == OPERATOR_CONTAINER] or containers[:1]
    return str(mine[0]["image"]) if mine and mine[0].get("image") else None


def _serving_label(manager: Manager, pod_name: str, namespace: str) -> None:
    """On the leader only (controllers run there): label this pod serving, unlabel the others."""
    pods = manager.informer(PODS, namespace=namespace, label_selector=OPERATOR_POD_SELECTOR)
    client = manager.client

    async def reconcile(key: ObjectKey) -> Requeue | None:
        pod = pods.store.get(key)
        if pod is None:
            return None
        serving = (meta(pod).get("labels") or {}).get(SERVING_LABEL) == "true"
        mine = key.name == pod_name
        if serving != mine:
            value = "true" if mine else None
            await client.patch(
                PODS, key.name, {"metadata": {"labels": {SERVING_LABEL: value}}}, key.namespace
            )
        return None

    manager.controller("serving-label", reconcile).watch(pods)


async def setup(manager: Manager) -> InstanceOperator:
    """Declare the operator's controllers on ``manager`` and start the servers PE pods call.

    Long: every controller, server and reader of the operator wired in one place, in the order
    they depend on each other.
    """
    settings = manager.settings
    operator = OperatorSettings.from_environment()
    client = manager.client
    watched = settings.watched_namespaces()
    # where bundles are named for a caller that is no PE pod: the one watched namespace, else its own
    namespace = watched[0] if len(watched) == 1 else operator.pod_namespace or "default"
    cache = BundleCache(operator.bundle_cache_dir())
    sessions: list[aiohttp.ClientSession] = []
    uploads = UploadedBundles(client)

    async def fetcher() -> BundleFetcher:
        session = aiohttp.ClientSession()
        sessions.append(session)
        return BundleFetcher(
            cache,
            session,
            read_secret=data_reader(client, SECRETS),
            read_config_map=data_reader(client, CONFIGMAPS),
            read_upload=uploads.restore,
        )

    pod_name = operator.pod_name
    pod_namespace = operator.pod_namespace or namespace
    image = await own_image(client, pod_name, pod_namespace) if pod_name else None
    coordinators = CoordinatorObjectSettings(operator.coordinator_mode, operator.coordinator_image_or(image))
    jobs = JobController(manager, fetcher, coordinators.mode, operator.retry_delay)
    caches = jobs.caches
    JobMilestones(manager)
    CoordinatorObjectsController(
        manager, coordinators, network_policies=await network_policies_served(client)
    )
    pes = PeController(manager)
    flow = start_reading(manager, pes.pods, jobs.plan_of, operator)
    autoscalers = JobAutoscalerController(manager, flow_reader(flow) if flow is not None else None)
    placement = NodePlacementController(manager)
    if pod_name:
        _serving_label(manager, pod_name, pod_namespace)

    # Who is at a request's address: PE pods may write on their job's API without credentials
    # and get their job's bundle from the repository.
    pods_by_address = PodsByAddress(pes.pods)
    # The REST API answers its callers (the PEs' reports, one per state or connectivity change;
    # tools) on a rate limit of its own: a 10% upgrade's reports never queue the rollout's writes.
    serving = manager.client_of_its_own()
    tokens, access = TokenReviewer(serving), AccessReviewer(serving)
    rest = InstanceRestApi(
        serving,
        caches.jobs,
        caches.pes,
        caches.services,
        CallerScope(watched, pods_by_address),
        caches.parallel_regions,
        pes.pods_by_owner,
        writers=pods_by_address,
        tokens=tokens,
        access=access,
    )
    fixed_host = operator.pe_notification_host
    datagrams = PeDatagrams(
        operator.pe_notification_port,
        (lambda job, pe, namespace: fixed_host) if fixed_host else pe_host,
    )
    broker = SubscriptionBroker(manager, caches.jobs, caches.exports, caches.imports, datagrams)
    app = rest.app()
    SubscriptionApi(rest, serving, broker).add_routes(app)
    BundleUploadApi(watched, uploads, cache, tokens, access).mount(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.bind_address, settings.api_port)
    await site.start()
    repository = BundleRepository(
        cache, namespace_by_pod(pods_by_address, namespace), pinned_by_pod(pods_by_address, caches.jobs)
    )
    await repository.start(settings.bind_address, settings.repository_port)
    return InstanceOperator(
        jobs,
        pes,
        placement,
        rest,
        repository,
        runner,
        broker,
        int(runner.addresses[0][1]),
        flow,
        sessions,
        autoscalers,
    )
