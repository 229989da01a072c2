"""A job's health in `lsjobs`: its PEs', as streamtool summarises them (`cli.streamtool.health`)."""

from __future__ import annotations

from typing import Any

from streams_k8s.cli.streamtool.health import Health, job_health, pe_health


def _pe(phase: str | None, connectivity: str = "Full") -> dict[str, Any]:
    return {"status": {"phase": phase, "connectivity": connectivity}} if phase else {}


def test_a_jobs_health_is_its_pes_as_streamtool_summarises_it() -> None:
    healthy, partial, down = _pe("Running"), _pe("Running", "Partial"), _pe("Pending")
    assert [pe_health(p) for p in (healthy, partial, down, _pe(None))] == [
        Health.HEALTHY,
        Health.PARTIALLY_HEALTHY,
        Health.UNHEALTHY,
        Health.UNHEALTHY,
    ]
    assert job_health([healthy, healthy]) is Health.HEALTHY
    assert job_health([healthy, partial]) is Health.PARTIALLY_HEALTHY
    assert job_health([healthy, down]) is Health.PARTIALLY_UNHEALTHY
    assert job_health([down, _pe(None)]) is Health.UNHEALTHY
    assert job_health([]) is Health.UNKNOWN
