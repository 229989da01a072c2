"""A pod's process started by a simulation that is then killed (no orderly stop) ends with it,
rather than living on under init at the pod address a later simulation hands out again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from streams_k8s.sandbox.cluster.process_leash import PARENT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")

# A stand-in for the simulation: it starts a leashed child as `pod_processes` does, says its pid,
# and waits to be killed.
SIMULATION = f"""
import os, subprocess, sys, time
child = subprocess.Popen(
    [sys.executable, "-c",
     "from streams_k8s.sandbox.cluster.process_leash import die_with_parent; die_with_parent()\\n"
     "import time; time.sleep(60)"],
    env={{**os.environ, {PARENT!r}: str(os.getpid())}},
)
print(child.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_a_pods_process_ends_when_its_simulation_is_killed() -> None:
    simulation = subprocess.Popen([sys.executable, "-c", SIMULATION], stdout=subprocess.PIPE, text=True)
    assert simulation.stdout is not None
    child = int(simulation.stdout.readline())
    try:
        time.sleep(0.5)  # the child has made its request
        assert alive(child)
        simulation.send_signal(signal.SIGKILL)
        simulation.wait()
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


def test_without_a_simulation_the_leash_does_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if k != PARENT}
    code = (
        "from streams_k8s.sandbox.cluster.process_leash import die_with_parent\n"
        "die_with_parent()\n"
        "print('ran')"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "ran"
