"""A real `kubectl` against an API server's kubeconfig (the sandbox's, or the real control plane's
with the test's namespace), for the tests that drive the API server the way a user does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import yaml

KUBECTL = shutil.which("kubectl")
MISSING = (
    "kubectl is not installed (.ci/run installs it from the Debian package sources: kubectl or "
    "kubernetes-client)"
)


class Kubectl:
    def __init__(self, kubeconfig: Path, tmp: Path) -> None:
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp)}
        self.cache = tmp / "kube-cache"
        self.tmp = tmp

    async def run(self, *args: str, stdin: str | None = None, ok: bool = True) -> tuple[int, str, str]:
        assert KUBECTL is not None
        proc = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--cache-dir",
            str(self.cache),
            "--request-timeout",
            "20s",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
        )
        out, err = await proc.communicate(stdin.encode() if stdin is not None else None)
        rc = proc.returncode if proc.returncode is not None else -1
        if ok:
            assert rc == 0, f"kubectl {' '.join(args)} failed ({rc}): {err.decode()}"
        return rc, out.decode(), err.decode()

    @contextlib.asynccontextmanager
    async def streaming(self, *args: str) -> AsyncIterator[asyncio.StreamReader]:
        """A long-running kubectl (`get -w`, `logs -f`): its output as it comes; stopped at the end."""
        assert KUBECTL is not None
        proc = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--cache-dir",
            str(self.cache),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.env,
        )
        assert proc.stdout is not None
        try:
            yield proc.stdout
        finally:
            if proc.returncode is None:
                proc.terminate()
            await proc.wait()

    async def json(self, *args: str) -> dict[str, object]:
        _, out, _ = await self.run(*args, "-o", "json")
        return orjson.loads(out)  # type: ignore[no-any-return]

    def manifest(self, name: str, *docs: object) -> str:
        path = self.tmp / name
        path.write_text(yaml.safe_dump_all(docs))
        return str(path)
