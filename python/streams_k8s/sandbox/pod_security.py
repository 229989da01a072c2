"""Pod Security admission: the Pod Security Standards, enforced per namespace by its labels.

A namespace chooses a level (``privileged``, ``baseline``, ``restricted``) per mode with the labels
``pod-security.kubernetes.io/enforce``, ``.../warn`` and ``.../audit`` (``...-version`` labels are
accepted; every version is evaluated as ``latest``). On pod creation, and on a pod update that
changes a container image, the pod is checked against each mode's level:
- ``enforce``: a violation is a 403 Forbidden naming every failed check;
- ``warn``: a ``Warning`` header on the answer (kubectl prints it);
- ``audit``: recorded in ``PodSecurity.audit`` (the sandbox has no audit log).
Workload objects (Deployments, StatefulSets) are checked on their pod template for ``warn`` and
``audit`` only, as kube-apiserver does; ``enforce`` applies to pods. A namespace label with an
unknown level is refused (422), and a pod in such a namespace is checked as ``restricted``.

The checks are the Pod Security Standards' (latest): baseline forbids host namespaces, privileged
and HostProcess containers, capabilities beyond the default set, hostPath volumes, host ports,
AppArmor, SELinux, /proc mount and seccomp overrides that weaken confinement, and unsafe sysctls;
restricted adds the volume types allowed, no privilege escalation, running as non-root (and not
as uid 0), a RuntimeDefault or Localhost seccomp profile, and dropping ALL capabilities (adding
back only NET_BIND_SERVICE). Exemptions (users, runtime classes, namespaces) are not configurable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from streams_k8s.sandbox.errors import ApiError, cause, invalid
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.resources import ResourceType
from streams_k8s.sandbox.warnings import warn

PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "warn", "audit")
LEVELS = ("privileged", "baseline", "restricted")
PODS = ("", "pods")
NAMESPACES = ("", "namespaces")
WORKLOADS = {("apps", "deployments"), ("apps", "statefulsets")}

_BASELINE_CAPABILITIES = {
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
}
_SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
_SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
_RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
_APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or ()


def _context(container: dict[str, Any]) -> dict[str, Any]:
    return container.get("securityContext") or {}


def _names(containers: list[dict[str, Any]]) -> str:
    quoted = ", ".join(f'"{c.get("name")}"' for c in containers)
    return f"container{'s' if len(containers) > 1 else ''} {quoted}"


Check = Callable[[dict[str, Any], dict[str, Any]], str | None]  # (metadata, spec) -> violation


def _host_process(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    pod = ((spec.get("securityContext") or {}).get("windowsOptions") or {}).get("hostProcess")
    bad = [c for c in _containers(spec) if (_context(c).get("windowsOptions") or {}).get("hostProcess")]
    if pod or bad:
        return "hostProcess (pod or containers must not set securityContext.windowsOptions.hostProcess=true)"
    return None


def _host_namespaces(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    return f"host namespaces ({', '.join(used)})" if used else None


def _privileged(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    bad = [c for c in _containers(spec) if _context(c).get("privileged")]
    return f"privileged ({_names(bad)} must not set securityContext.privileged=true)" if bad else None


def _baseline_capabilities(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    added: set[str] = set()
    bad = []
    for c in _containers(spec):
        extra = set((_context(c).get("capabilities") or {}).get("add") or ()) - _BASELINE_CAPABILITIES
        if extra:
            added |= extra
            bad.append(c)
    if not bad:
        return None
    listed = ", ".join(sorted(added))
    where = "securityContext.capabilities.add"
    return f"non-default capabilities ({_names(bad)} must not include {listed} in {where})"


def _host_path(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    bad = [v.get("name") for v in spec.get("volumes") or () if "hostPath" in v]
    return f"hostPath volumes ({', '.join(map(str, bad))})" if bad else None


def _host_ports(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    ports = [str(p["hostPort"]) for c in _containers(spec) for p in c.get("ports") or () if p.get("hostPort")]
    return f"hostPort ({', '.join(ports)})" if ports else None


def _apparmor(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    annotations = meta.get("annotations") or {}
    bad = [
        v
        for k, v in annotations.items()
        if k.startswith(_APPARMOR_ANNOTATION)
        and v != "runtime/default"
        and not str(v).startswith("localhost/")
    ]
    profiles = [(spec.get("securityContext") or {}).get("appArmorProfile")]
    profiles += [_context(c).get("appArmorProfile") for c in _containers(spec)]
    bad += [p.get("type") for p in profiles if p and p.get("type") not in ("RuntimeDefault", "Localhost")]
    return f"forbidden AppArmor profiles ({', '.join(map(str, bad))})" if bad else None


def _selinux(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    options = [(spec.get("securityContext") or {}).get("seLinuxOptions")]
    options += [_context(c).get("seLinuxOptions") for c in _containers(spec)]
    for o in options:
        if o and (o.get("type", "") not in _SELINUX_TYPES or o.get("user") or o.get("role")):
            return "seLinuxOptions (type must be a container type, user and role must not be set)"
    return None


def _proc_mount(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    bad = [c for c in _containers(spec) if _context(c).get("procMount", "Default") != "Default"]
    return f"procMount ({_names(bad)} must not set securityContext.procMount)" if bad else None


def _baseline_seccomp(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    profiles = [((spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")]
    profiles += [(_context(c).get("seccompProfile") or {}).get("type") for c in _containers(spec)]
    return 'seccompProfile (type must not be "Unconfined")' if "Unconfined" in profiles else None


def _sysctls(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    names = [s.get("name") for s in (spec.get("securityContext") or {}).get("sysctls") or ()]
    bad = [str(n) for n in names if n not in _SAFE_SYSCTLS]
    return f"forbidden sysctls ({', '.join(bad)})" if bad else None


def _linux(spec: dict[str, Any]) -> bool:
    return (spec.get("os") or {}).get("name") != "windows"


def _volume_types(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    bad = []
    for volume in spec.get("volumes") or ():
        kinds = [k for k in volume if k != "name"]
        if not kinds or any(k not in _RESTRICTED_VOLUMES for k in kinds):
            bad.append(f'"{volume.get("name")}"')
    return f"restricted volume types (volumes {', '.join(bad)})" if bad else None


def _privilege_escalation(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    if not _linux(spec):
        return None
    bad = [c for c in _containers(spec) if _context(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    must = "must set securityContext.allowPrivilegeEscalation=false"
    return f"allowPrivilegeEscalation != false ({_names(bad)} {must})"


def _run_as_non_root(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    pod = (spec.get("securityContext") or {}).get("runAsNonRoot")
    explicit_false = [c for c in _containers(spec) if _context(c).get("runAsNonRoot") is False]
    unset = [c for c in _containers(spec) if _context(c).get("runAsNonRoot") is None]
    if pod is False or explicit_false or (pod is not True and unset):
        bad = explicit_false or unset
        return f"runAsNonRoot != true (pod or {_names(bad)} must set securityContext.runAsNonRoot=true)"
    return None


def _run_as_user(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    pod = (spec.get("securityContext") or {}).get("runAsUser")
    bad = [c for c in _containers(spec) if _context(c).get("runAsUser") == 0]
    if pod == 0 or bad:
        return "runAsUser=0 (pod and containers must not set runAsUser=0)"
    return None


def _restricted_seccomp(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    if not _linux(spec):
        return None
    allowed = ("RuntimeDefault", "Localhost")
    pod = ((spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    bad = []
    for c in _containers(spec):
        own = (_context(c).get("seccompProfile") or {}).get("type")
        if (own is None and pod not in allowed) or (own is not None and own not in allowed):
            bad.append(c)
    if pod is not None and pod not in allowed:
        return f'seccompProfile (pod must not set securityContext.seccompProfile.type to "{pod}")'
    if not bad:
        return None
    return (
        f"seccompProfile (pod or {_names(bad)} must set securityContext.seccompProfile.type to "
        '"RuntimeDefault" or "Localhost")'
    )


def _restricted_capabilities(meta: dict[str, Any], spec: dict[str, Any]) -> str | None:
    if not _linux(spec):
        return None
    undropped, added = [], []
    for c in _containers(spec):
        capabilities = _context(c).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            undropped.append(c)
        if set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"}:
            added.append(c)
    problems = []
    if undropped:
        problems.append(f'{_names(undropped)} must set securityContext.capabilities.drop=["ALL"]')
    if added:
        problems.append(f'{_names(added)} must not include capabilities other than "NET_BIND_SERVICE"')
    return f"unrestricted capabilities ({'; '.join(problems)})" if problems else None


BASELINE: tuple[Check, ...] = (
    _host_process,
    _host_namespaces,
    _privileged,
    _baseline_capabilities,
    _host_path,
    _host_ports,
    _apparmor,
    _selinux,
    _proc_mount,
    _baseline_seccomp,
    _sysctls,
)
RESTRICTED: tuple[Check, ...] = (
    *BASELINE,
    _volume_types,
    _privilege_escalation,
    _run_as_non_root,
    _run_as_user,
    _restricted_seccomp,
    _restricted_capabilities,
)
_CHECKS = {"privileged": (), "baseline": BASELINE, "restricted": RESTRICTED}


def violations(level: str, metadata: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """What a pod (its metadata and spec) breaks of a level's checks."""
    return [v for check in _CHECKS[level] if (v := check(metadata, spec)) is not None]


@dataclass
class PodSecurity:
    """The admission step, registered on a Registry (``registry.pipeline.plugins``)."""

    registry: Registry
    audit: list[tuple[str, str, str]] = field(default_factory=list)  # (namespace/name, level, violations)

    def levels(self, namespace: str) -> dict[str, str]:
        ns = self.registry.find(self.registry.types[NAMESPACES], None, namespace)
        labels = (ns or {}).get("metadata", {}).get("labels") or {}
        out = {}
        for mode in MODES:
            value = labels.get(PREFIX + mode)
            if value is not None:
                out[mode] = value if value in LEVELS else "restricted"  # invalid: the strictest
        return out

    def __call__(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if rt.key == NAMESPACES:
            self._check_labels(obj)
        elif rt.key == PODS:
            if old is None or _images(obj) != _images(old):
                self._admit(obj, obj.get("metadata") or {}, obj.get("spec") or {}, pod=True)
        elif rt.key in WORKLOADS:
            template = (obj.get("spec") or {}).get("template") or {}
            self._admit(obj, template.get("metadata") or {}, template.get("spec") or {}, pod=False)

    def _admit(
        self, obj: dict[str, Any], metadata: dict[str, Any], spec: dict[str, Any], *, pod: bool
    ) -> None:
        meta = obj["metadata"]
        levels = self.levels(str(meta.get("namespace") or ""))
        verdicts = {level: violations(level, metadata, spec) for level in set(levels.values())}

        def text(level: str) -> str:
            return f'PodSecurity "{level}:latest": {", ".join(verdicts[level])}'

        enforced = levels.get("enforce")
        if pod and enforced and verdicts[enforced]:
            raise ApiError(
                403,
                f'pods "{meta.get("name")}" is forbidden: violates {text(enforced)}',
                reason="Forbidden",
                name=str(meta.get("name") or ""),
                kind="pods",
            )
        warned = levels.get("warn")
        if warned and verdicts[warned]:
            warn(f"would violate {text(warned)}")
        audited = levels.get("audit")
        if audited and verdicts[audited]:
            self.audit.append((f"{meta.get('namespace')}/{meta.get('name')}", audited, text(audited)))

    @staticmethod
    def _check_labels(namespace: dict[str, Any]) -> None:
        labels = namespace.get("metadata", {}).get("labels") or {}
        errors = [
            cause(
                f"metadata.labels[{PREFIX}{mode}]",
                f'Invalid value: "{labels[PREFIX + mode]}": must be one of {", ".join(LEVELS)}',
            )
            for mode in MODES
            if PREFIX + mode in labels and labels[PREFIX + mode] not in LEVELS
        ]
        if errors:
            raise invalid("Namespace", str(namespace["metadata"].get("name") or ""), errors)


def _images(pod: dict[str, Any]) -> list[Any]:
    return [c.get("image") for c in _containers(pod.get("spec") or {})]
