"""One process of the control plane: started with its flags, its output in a log file of its own,
waited for until its health endpoint answers, and stopped (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import contextlib
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

POLL = 0.1
STOP_GRACE = 10.0


class StartFailed(RuntimeError):
    """A component exited or never became healthy; the message ends with its log's last lines."""


@dataclass(frozen=True)
class Probe:
    """Where a component says it is healthy, and how to reach it."""

    url: str
    context: ssl.SSLContext | None = None


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Process:
    def __init__(self, name: str, argv: Sequence[str], log: Path, probe: Probe) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.probe = probe
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            # Its own process group: a Ctrl-C of the person who started the control plane reaches
            # the command, which then stops the components in order.
            self._popen = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.probe.url, timeout=2, context=self.probe.context) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if not self.running():
                code = self._popen.returncode if self._popen is not None else None
                raise StartFailed(
                    f"{self.name} exited with code {code}; its log ({self.log}) ends:\n{tail(self.log)}"
                )
            if time.monotonic() > deadline:
                raise StartFailed(
                    f"{self.name} was not healthy at {self.probe.url} within {timeout:.0f} s; "
                    f"its log ({self.log}) ends:\n{tail(self.log)}"
                )
            time.sleep(POLL)

    def stop(self) -> None:
        popen, self._popen = self._popen, None
        if popen is None or popen.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGTERM)
        try:
            popen.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
