"""How long a started PE pod waits for its connectivity report before the PE controller records
it running itself (`pes.report_wait`): the record must come for a runtime that never reports,
and should not come just before a late report (two status writes instead of one)."""

from __future__ import annotations

from streams_k8s.controller.pes.report_wait import MAX_REPORT_GRACE, REPORT_GRACE, ReportWait
from streams_k8s.k8s.objects import ObjectKey


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pe(i: int) -> ObjectKey:
    return ObjectKey("default", f"job-{i}")


def test_a_runtime_that_never_reports_waits_the_minimum() -> None:
    clock = Clock()
    wait = ReportWait(clock=clock)
    assert wait.remaining(pe(0), "uid-0", 1) == REPORT_GRACE
    clock.now += 1.0
    assert wait.remaining(pe(0), "uid-0", 1) == REPORT_GRACE - 1.0
    assert wait.ran_unrecorded(pe(0), "uid-0") == 1
    clock.now += REPORT_GRACE
    assert wait.remaining(pe(0), "uid-0", 1) <= 0  # the controller records it now
    wait.recorded(pe(0), by_report=False)
    assert wait.ran_unrecorded(pe(0), "uid-0") == 0
    assert wait.grace() == REPORT_GRACE  # no report came: the next pod waits as long


def test_late_reports_make_the_wait_longer_and_prompt_ones_shorter_again() -> None:
    clock = Clock()
    wait = ReportWait(clock=clock)
    wait.remaining(pe(0), "uid-0", 1)
    clock.now += REPORT_GRACE
    wait.recorded(pe(0), by_report=False)  # gave up: the controller wrote the record
    clock.now += 3.0
    wait.reported(pe(0), "uid-0")  # the report came 6 s after the pod ran
    assert wait.grace() == 9.0
    assert wait.remaining(pe(1), "uid-1", 1) == 9.0  # the next pod waits long enough for such a report

    for i in range(2, 102):  # the load is gone: reports come within a second
        wait.remaining(pe(i), f"uid-{i}", 1)
        clock.now += 0.5
        wait.recorded(pe(i), by_report=True)
    assert wait.grace() == REPORT_GRACE


def test_the_wait_is_bounded_and_forgets_deleted_pes() -> None:
    clock = Clock()
    wait = ReportWait(clock=clock)
    wait.remaining(pe(0), "uid-0", 1)
    clock.now += 120.0
    wait.recorded(pe(0), by_report=True)
    assert wait.grace() == MAX_REPORT_GRACE
    wait.remaining(pe(1), "uid-1", 1)
    wait.forget(pe(1))
    assert len(wait) == 0


def test_a_new_launch_or_a_new_pe_under_the_same_name_starts_its_own_wait() -> None:
    clock = Clock()
    wait = ReportWait(clock=clock)
    wait.remaining(pe(0), "uid-0", 1)
    clock.now += 2.0
    assert wait.remaining(pe(0), "uid-0", 2) == REPORT_GRACE
    assert wait.remaining(pe(0), "uid-new", 1) == REPORT_GRACE
    assert wait.ran_unrecorded(pe(0), "uid-0") == 0
