"""The PE-runtime contract (`streams_k8s.api.contract`): its names, and the places that cannot
import it but must agree with it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from streams_k8s.api import contract
from streams_k8s.k8s.settings import RuntimeSettings


def test_a_pe_is_reached_at_its_headless_service_in_the_jobs_namespace() -> None:
    assert contract.pe_service_name("wordcount", 3) == "wordcount-3"
    assert contract.pe_host("wordcount", 3, "streams") == "wordcount-3.streams"
    template = contract.PE_HOST_TEMPLATE
    assert template.format(job="wordcount", pe=3, namespace="streams") == "wordcount-3.streams"


def test_a_job_reaches_its_coordinator_at_the_service_the_runtime_builds() -> None:
    assert contract.coordinator_service_name("trades") == "streams-trades-consistentregion-api"
    assert contract.coordinator_name("trades") == "trades-consistent-region-operator"


def test_the_name_table_is_dated_as_java_properties_store_dates_it_in_utc() -> None:
    moment = datetime(2021, 3, 2, 10, 15, tzinfo=UTC)
    assert contract.name_table_stamp(moment) == "Tue Mar 02 10:15:00 UTC 2021"
    elsewhere = moment.astimezone(timezone(timedelta(hours=2)))
    assert contract.name_table_stamp(elsewhere) == "Tue Mar 02 10:15:00 UTC 2021"


def test_input_ports_are_named_and_numbered_from_the_base() -> None:
    assert contract.input_port_name(2) == "sys-2"
    assert contract.PE_PORT_BASE + 2 == 10002


def test_the_runtime_settings_listen_where_the_runtime_calls() -> None:
    """`k8s` imports nothing of ours: its defaults restate the contract's ports, held equal here."""
    defaults = RuntimeSettings.model_fields
    assert defaults["api_port"].default == contract.INSTANCE_API_PORT
    assert defaults["repository_port"].default == contract.REPOSITORY_PORT
