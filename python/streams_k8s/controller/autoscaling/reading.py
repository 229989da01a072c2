"""The autoscaler's reading of a job's PEs: the latest round of the operator's flow reading
(`streams_k8s.controller.flow.scraper`). Each PE is read once a round, for the flow view, the
``/metrics`` series and the autoscaler alike, where that reading is set up to read it (each pod's
port at the addresses ``STREAMS_K8S_FLOW_POD_NETWORK`` maps, or a Prometheus), every
``STREAMS_K8S_FLOW_INTERVAL`` seconds. A PE whose last reading failed is left out of the scrape
(its instances then miss from the window).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from streams_k8s.controller.autoscaling.observations import Scrape, scrape_of
from streams_k8s.controller.flow.scraper import FlowScraper
from streams_k8s.k8s.objects import ObjectKey

JobReader = Callable[[ObjectKey], Scrape | None]  # a job -> its PEs' latest readings (None: none yet)


def flow_reader(scraper: FlowScraper) -> JobReader:
    """The job's PEs as ``scraper``'s latest round read them, timed by the wall clock (the
    decision history is stamped with it)."""

    def read(job: ObjectKey) -> Scrape | None:
        latest = scraper.latest(job)
        if latest is None:
            return None
        age, samples = latest
        return scrape_of(time.time() - age, {str(pe): sample for pe, sample in samples.items()})

    return read
