"""Where the simulated containers' output goes: the lines the kubelet, the PE runtime and the
processes of `pod_processes` write, per pod and container.

The embedded sandbox keeps them for ``kubectl logs`` (its `pod_streams.ContainerLogs`, which has
this shape); against another API server, `LogDirectory` writes them to files (a real
``kubectl logs`` asks the node's kubelet, which a simulated node does not serve).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol


class ContainerLog(Protocol):
    def write(self, uid: str, container: str, text: str) -> None:
        """Lines of the container ``container`` of the pod ``uid``."""


class LogDirectory:
    """``<directory>/<pod uid>/<container>.log``, one timestamped line per line written."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def write(self, uid: str, container: str, text: str) -> None:
        folder = self.directory / uid
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with (folder / f"{container}.log").open("a", encoding="utf-8") as out:
            out.writelines(f"{stamp} {line}\n" for line in text.splitlines() or [""])


class NoLogs:
    """Output nobody keeps."""

    def write(self, uid: str, container: str, text: str) -> None:
        return None
