"""Containers that run for real: the simulated kubelet starts a container whose program is ours
(`container_env.runs_here`: a consistent-region coordinator, the operator) as a ``streams-k8s``
process, its emptyDir volumes as directories of the pod's (`container_mounts`).

Each process gets what the container would: the pod's arguments and environment
(`container_env`), and the pod's service-account identity: a kubeconfig (``KUBECONFIG``) whose
user is a pod-bound token of the pod's service account (`pod_tokens`), renewed as the kubelet
renews projected tokens; the API server is the one the simulation talks to. A pod has a network of
its own in a cluster; here each process-running pod listens on a loopback address of its own
(``STREAMS_K8S_BIND_ADDRESS`` and ``STREAMS_K8S_CR_BIND_ADDRESS``: 127.245.N.M for pod address
10.244.N.M, `pod_network`), entered in the `HostNetwork` table that callers of the pod's address
read. Its output (stdout and stderr) is the container's log. Stopping it is SIGTERM, then SIGKILL
once the grace period is over; its exit code is the container's. A simulation killed takes its
processes with it (`process_leash`).

The process also inherits what a Python program needs from this host's environment (PATH,
PYTHONPATH, HOME, locale, temporary directory, virtualenv), nothing else: ``KUBERNETES_SERVICE_HOST``
and the like are not passed, so it never takes itself for an in-cluster pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from streams_k8s.sandbox.cluster.container_env import command_line, environment, runs_here
from streams_k8s.sandbox.cluster.container_logs import ContainerLog
from streams_k8s.sandbox.cluster.container_mounts import empty_dirs, mounted_environment, translate
from streams_k8s.sandbox.cluster.pod_tokens import PodRef, PodTokens
from streams_k8s.sandbox.cluster.process_leash import PARENT

log = logging.getLogger(__name__)

_HOST_VARIABLES = ("PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "PYTHONHASHSEED")
_PROGRAM = (
    sys.executable,
    "-c",
    "from streams_k8s.sandbox.cluster.process_leash import die_with_parent; die_with_parent()\n"
    "from streams_k8s.cli import main; main()",
)
RENEW_CHECK = 60.0

# (pod uid, container, exit code) when a process ends on its own.
Exited = Callable[[str, str, int], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ApiServerAccess:
    """How a pod's process reaches the API server: its URL and the CA that signs it."""

    url: str
    ca_cert: Path | None = None
    verify: bool = True


@dataclass
class _Running:
    pod: PodRef
    container: str
    process: asyncio.subprocess.Process
    output: asyncio.Task[None]
    stopping: bool = False


@dataclass
class _Pod:
    ref: PodRef
    address: str
    directory: Path
    containers: dict[str, _Running] = field(default_factory=dict)


def kubeconfig(api: ApiServerAccess, token_file: Path, namespace: str) -> dict[str, Any]:
    """A service account's kubeconfig: the API server and a token file (re-read on a 401)."""
    cluster: dict[str, Any] = {"server": api.url}
    if api.ca_cert is not None:
        cluster["certificate-authority"] = str(api.ca_cert)
    if not api.verify:
        cluster["insecure-skip-tls-verify"] = True
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "pod", "user": {"tokenFile": str(token_file)}}],
        "contexts": [
            {"name": "pod", "context": {"cluster": "cluster", "user": "pod", "namespace": namespace}}
        ],
        "current-context": "pod",
    }


class PodProcesses:
    def __init__(
        self, api: ApiServerAccess, tokens: PodTokens, logs: ContainerLog, workdir: Path, exited: Exited
    ) -> None:
        self.api = api
        self.tokens = tokens
        self.logs = logs
        self.workdir = workdir
        self.exited = exited
        self._pods: dict[str, _Pod] = {}  # pod uid -> what runs of it
        self._renewal: asyncio.Task[None] | None = None

    @staticmethod
    def runs(pod: dict[str, Any]) -> bool:
        """Whether any container of the pod runs as a process here."""
        return any(runs_here(c) for c in (pod.get("spec") or {}).get("containers") or [])

    def running(self, uid: str) -> bool:
        held = self._pods.get(uid)
        return held is not None and bool(held.containers)

    async def start(self, pod: dict[str, Any], address: str, pod_ip: str, host_ip: str) -> None:
        """Start every container of the pod whose program is ours, listening on ``address``."""
        ref = PodRef.of(pod)
        held = self._pods.get(ref.uid)
        if held is None:
            directory = self.workdir / ref.uid
            directory.mkdir(parents=True, exist_ok=True)
            held = self._pods[ref.uid] = _Pod(ref, address, directory)
            await self._write_credentials(held)
        for container in (pod.get("spec") or {}).get("containers") or []:
            if runs_here(container) and container["name"] not in held.containers:
                await self._start_one(held, pod, container, pod_ip, host_ip)
        if self._renewal is None:
            self._renewal = asyncio.get_running_loop().create_task(self._renew(), name="pod token renewal")

    async def _write_credentials(self, held: _Pod) -> None:
        token = await self.tokens.token(held.ref)
        token_file = held.directory / "token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        config = held.directory / "kubeconfig"
        config.write_text(
            yaml.safe_dump(kubeconfig(self.api, token_file, held.ref.namespace), sort_keys=False)
        )
        config.chmod(0o600)

    async def _start_one(
        self, held: _Pod, pod: dict[str, Any], container: dict[str, Any], pod_ip: str, host_ip: str
    ) -> None:
        env, problems = environment(pod, container, pod_ip=pod_ip, host_ip=host_ip)
        mounts = empty_dirs(pod, container, held.directory / "volumes")
        name = str(container["name"])
        for problem in problems:
            self.logs.write(held.ref.uid, name, f"sandbox kubelet: {problem}")
        inherited = {k: os.environ[k] for k in _HOST_VARIABLES if k in os.environ}
        variables = {
            **inherited,
            **mounted_environment(env, mounts),
            "KUBECONFIG": str(held.directory / "kubeconfig"),
            "STREAMS_K8S_BIND_ADDRESS": held.address,
            "STREAMS_K8S_CR_BIND_ADDRESS": held.address,
            "PYTHONUNBUFFERED": "1",
            PARENT: str(os.getpid()),
        }
        process = await asyncio.create_subprocess_exec(
            *_PROGRAM,
            *(translate(arg, mounts) for arg in command_line(container, env)),
            env=variables,
            cwd=held.directory,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the simulation reaches it through us, not the terminal
        )
        output = asyncio.get_running_loop().create_task(
            self._follow(held, name, process), name=f"{name} output"
        )
        held.containers[name] = _Running(held.ref, name, process, output)
        self.logs.write(
            held.ref.uid, name, f"sandbox kubelet: started process {process.pid} listening on {held.address}"
        )

    async def _follow(self, held: _Pod, name: str, process: asyncio.subprocess.Process) -> None:
        """Copy the process's output to the container's log; report its exit unless it was stopped."""
        assert process.stdout is not None
        async for line in process.stdout:
            self.logs.write(held.ref.uid, name, line.decode(errors="replace").rstrip("\n"))
        code = await process.wait()
        # asyncio leaves the transport for the garbage collector, which may close it after the
        # loop is gone (a RuntimeError in __del__): close it while the loop runs.
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()
        code = 128 - code if code < 0 else code  # killed by a signal: 128 + its number, as a shell says
        running = held.containers.get(name)
        if running is not None and running.process is process and not running.stopping:
            del held.containers[name]
            await self.exited(held.ref.uid, name, code)

    async def restart(self, pod: dict[str, Any], container: str, pod_ip: str, host_ip: str) -> None:
        """Run an exited container again (its restartPolicy says so)."""
        held = self._pods.get(PodRef.of(pod).uid)
        spec = next(
            (c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container), None
        )
        if held is not None and spec is not None and container not in held.containers:
            await self._start_one(held, pod, spec, pod_ip, host_ip)

    async def kill(self, uid: str) -> None:
        """SIGKILL every process of the pod, as an OOM kill would; each exit is reported as its
        container's (once reported, this returns)."""
        held = self._pods.get(uid)
        running = list(held.containers.values()) if held is not None else []
        for each in running:
            with contextlib.suppress(ProcessLookupError):
                each.process.kill()
        await asyncio.gather(*(each.output for each in running))

    async def stop(self, uid: str, grace: float) -> dict[str, int]:
        """SIGTERM every process of the pod, SIGKILL what still runs after ``grace`` seconds; the
        exit codes, by container. The pod's files go with it. Interrupted, it kills what still
        runs, and the pod stays known until a later stop (or `close`) has seen every exit."""
        held = self._pods.get(uid)
        if held is None:
            return {}
        codes = {}
        try:
            for running in held.containers.values():
                running.stopping = True
                with contextlib.suppress(ProcessLookupError):
                    running.process.send_signal(signal.SIGTERM if grace > 0 else signal.SIGKILL)
            for name, running in held.containers.items():
                try:
                    code = await asyncio.wait_for(running.process.wait(), grace if grace > 0 else None)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        running.process.kill()
                    code = await running.process.wait()
                await running.output
                codes[name] = 128 - code if code < 0 else code
                pid = running.process.pid
                self.logs.write(uid, name, f"sandbox kubelet: process {pid} exited with {codes[name]}")
        finally:
            alive = [r for r in held.containers.values() if r.process.returncode is None]
            for running in alive:
                with contextlib.suppress(ProcessLookupError):
                    running.process.kill()
            if not alive and self._pods.pop(uid, None) is not None:
                shutil.rmtree(held.directory, ignore_errors=True)
        return codes

    async def _renew(self) -> None:
        """Keep every running pod's token fresh (the token cache says when it is due)."""
        while True:
            await asyncio.sleep(RENEW_CHECK)
            for held in list(self._pods.values()):
                try:
                    await self._write_credentials(held)
                except Exception as exc:  # the pod may be going; its next renewal tries again
                    log.warning("pod %s/%s: token not renewed: %s", held.ref.namespace, held.ref.name, exc)

    async def close(self, grace: float = 2.0) -> None:
        """Stop every process (the simulation ends)."""
        if self._renewal is not None:
            self._renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewal
            self._renewal = None
        await asyncio.gather(*(self.stop(uid, grace) for uid in list(self._pods)))
