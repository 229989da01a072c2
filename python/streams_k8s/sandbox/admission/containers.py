"""Containers of a pod spec: ports, env (values, field and resource references, sources), volume
mounts, resources, security contexts, probes and lifecycle handlers."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.quantity import parse_quantity
from streams_k8s.sandbox.admission import names, ports
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index, key
from streams_k8s.sandbox.admission.names import MAX_INT32
from streams_k8s.sandbox.admission.volumes import relative_path

_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_ENV_FIELD_PATHS = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
]
_RESOURCE_FIELD_PREFIXES = ("limits.", "requests.")
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def validate_container(
    container: dict[str, Any], volumes: set[str], path: str, errors: FieldErrors, liveness_once: bool
) -> None:
    name = container.get("name", "")
    if not name:
        errors.required(child(path, "name"))
    else:
        errors.invalid_each(child(path, "name"), name, names.dns1123_label(name))
    _container_ports(container.get("ports") or [], child(path, "ports"), errors)
    _env(container.get("env") or [], child(path, "env"), errors)
    _env_from(container.get("envFrom") or [], child(path, "envFrom"), errors)
    _mounts(container.get("volumeMounts") or [], volumes, child(path, "volumeMounts"), errors)
    errors.one_of(child(path, "imagePullPolicy"), container.get("imagePullPolicy"), _PULL_POLICIES)
    policy = container.get("terminationMessagePolicy")
    if policy is not None and policy not in ("File", "FallbackToLogsOnError"):
        errors.invalid(
            child(path, "terminationMessagePolicy"), policy, "must be 'File' or 'FallbackToLogsOnError'"
        )
    _resources(container.get("resources") or {}, child(path, "resources"), errors)
    validate_security_context(container.get("securityContext") or {}, child(path, "securityContext"), errors)
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(probe_name)
        if probe is not None:
            at = child(path, probe_name)
            _probe(probe, at, errors)
            if probe_name != "readinessProbe" and probe.get("successThreshold", 1) != 1:
                errors.invalid(child(at, "successThreshold"), probe["successThreshold"], "must be 1")
    for hook in ("postStart", "preStop"):
        handler = (container.get("lifecycle") or {}).get(hook)
        if handler is not None:
            _handler(handler, child(child(path, "lifecycle"), hook), errors, lifecycle=True)


def _container_ports(container_ports: list[dict[str, Any]], path: str, errors: FieldErrors) -> None:
    seen: set[str] = set()
    for i, port in enumerate(container_ports):
        at = index(path, i)
        name = port.get("name", "")
        if name:
            messages = names.port_name(name)
            if messages:
                errors.invalid_each(child(at, "name"), name, messages)
            elif name in seen:
                errors.duplicate(child(at, "name"), name)
            else:
                seen.add(name)
        number = port.get("containerPort", 0)
        if number == 0:
            errors.required(child(at, "containerPort"))
        else:
            ports.number(number, child(at, "containerPort"), errors)
        if port.get("hostPort"):
            ports.number(port["hostPort"], child(at, "hostPort"), errors)
        ports.protocol(port.get("protocol", ""), child(at, "protocol"), errors)


def _env(variables: list[dict[str, Any]], path: str, errors: FieldErrors) -> None:
    for i, variable in enumerate(variables):
        at = index(path, i)
        name = variable.get("name", "")
        if not name:
            errors.required(child(at, "name"))
        errors.invalid_each(child(at, "name"), name, names.env_var_name(name))
        source = variable.get("valueFrom")
        if source is None:
            continue
        from_path = child(at, "valueFrom")
        count = 0
        if source.get("fieldRef") is not None:
            count += 1
            _field_ref(source["fieldRef"], child(from_path, "fieldRef"), errors)
        if source.get("resourceFieldRef") is not None:
            count += 1
            resource = source["resourceFieldRef"].get("resource", "")
            ref_path = child(child(from_path, "resourceFieldRef"), "resource")
            if not resource:
                errors.required(ref_path)
            elif not (resource in _STANDARD_RESOURCES or resource.startswith(_RESOURCE_FIELD_PREFIXES)):
                errors.not_supported(ref_path, resource, _resource_field_paths())
        for ref_name in ("configMapKeyRef", "secretKeyRef"):
            if source.get(ref_name) is not None:
                count += 1
                _key_selector(source[ref_name], child(from_path, ref_name), errors)
        if count == 0:
            errors.invalid(
                from_path,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            )
        elif variable.get("value"):
            errors.invalid(from_path, "", "may not be specified when `value` is not empty")
        elif count > 1:
            errors.invalid(from_path, "", "may not have more than one field specified at a time")


def _resource_field_paths() -> list[str]:
    return sorted(
        [
            "limits.cpu",
            "limits.ephemeral-storage",
            "limits.memory",
            "requests.cpu",
            "requests.ephemeral-storage",
            "requests.memory",
        ]
    )


# What kube-apiserver converts in a downward API fieldPath (pods.ConvertDownwardAPIFieldLabel)
_CONVERTIBLE_FIELD_PATHS = frozenset(
    {
        "metadata.annotations",
        "metadata.labels",
        *_ENV_FIELD_PATHS,
        "spec.restartPolicy",
        "spec.schedulerName",
        "status.phase",
        "spec.host",
    }
)


def _field_path_conversion_error(api_version: str, field_path: str) -> str | None:
    if api_version != "v1":
        return f"unsupported pod version: {api_version}"
    if field_path.endswith("']") and "['" in field_path:
        base = field_path[:-2].split("['", 1)[0]
        if base not in ("metadata.annotations", "metadata.labels"):
            return f"field label does not support subscript: {field_path}"
    elif field_path not in _CONVERTIBLE_FIELD_PATHS:
        return f"field label not supported: {field_path}"
    return None


def _field_ref(ref: dict[str, Any], path: str, errors: FieldErrors) -> None:
    if not ref.get("apiVersion"):
        errors.required(child(path, "apiVersion"))
        return
    field_path = ref.get("fieldPath", "")
    if not field_path:
        errors.required(child(path, "fieldPath"))
        return
    conversion_error = _field_path_conversion_error(ref["apiVersion"], field_path)
    if conversion_error is not None:
        errors.invalid(
            child(path, "fieldPath"), field_path, f"error converting fieldPath: {conversion_error}"
        )
        return
    if field_path.endswith("']") and "['" in field_path:
        base, subscript = field_path[:-2].split("['", 1)
        if base == "metadata.annotations":
            errors.invalid_each(path, subscript.lower(), names.qualified_name(subscript.lower()))
        else:
            errors.invalid_each(path, subscript, names.qualified_name(subscript))
    else:
        field_path = "spec.nodeName" if field_path == "spec.host" else field_path
        if field_path not in _ENV_FIELD_PATHS:
            errors.not_supported(child(path, "fieldPath"), field_path, _ENV_FIELD_PATHS)


def _key_selector(ref: dict[str, Any], path: str, errors: FieldErrors) -> None:
    errors.invalid_each(
        child(path, "name"), ref.get("name", ""), names.dns1123_subdomain(ref.get("name", ""))
    )
    ref_key = ref.get("key", "")
    if not ref_key:
        errors.required(child(path, "key"))
    else:
        errors.invalid_each(child(path, "key"), ref_key, names.config_map_key(ref_key))


def _env_from(sources: list[dict[str, Any]], path: str, errors: FieldErrors) -> None:
    for i, source in enumerate(sources):
        at = index(path, i)
        if source.get("prefix"):
            errors.invalid_each(child(at, "prefix"), source["prefix"], names.env_var_name(source["prefix"]))
        refs = [r for r in ("configMapRef", "secretRef") if source.get(r) is not None]
        for ref in refs:
            ref_name = source[ref].get("name", "")
            if not ref_name:
                errors.required(child(child(at, ref), "name"))
            else:
                errors.invalid_each(
                    child(child(at, ref), "name"), ref_name, names.dns1123_subdomain(ref_name)
                )
        if not refs:
            errors.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`")
        elif len(refs) > 1:
            errors.invalid(path, "", "may not have more than one field specified at a time")


def _mounts(mounts: list[dict[str, Any]], volumes: set[str], path: str, errors: FieldErrors) -> None:
    mount_points: set[str] = set()
    for i, mount in enumerate(mounts):
        at = index(path, i)
        name = mount.get("name", "")
        if not name:
            errors.required(child(at, "name"))
        if name not in volumes:
            errors.not_found(child(at, "name"), name)
        mount_path = mount.get("mountPath", "")
        if not mount_path:
            errors.required(child(at, "mountPath"))
        if mount_path in mount_points:
            errors.invalid(child(at, "mountPath"), mount_path, "must be unique")
        mount_points.add(mount_path)
        if mount.get("subPath"):
            relative_path(mount["subPath"], child(path, "subPath"), errors)
            if mount.get("subPathExpr"):
                errors.invalid(
                    child(at, "subPathExpr"),
                    mount["subPathExpr"],
                    "subPathExpr and subPath are mutually exclusive",
                )


def _resources(resources: dict[str, Any], path: str, errors: FieldErrors) -> None:
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    for section, values in (("limits", limits), ("requests", requests)):
        for resource, quantity in sorted(values.items()):
            at = key(child(path, section), resource)
            _resource_name(resource, at, errors)
            if parse_quantity(quantity) < 0:
                errors.invalid(at, str(quantity), "must be greater than or equal to 0")
    for resource, quantity in sorted(requests.items()):
        if resource in limits:
            limit = limits[resource]
            if resource.startswith("hugepages-") and parse_quantity(quantity) != parse_quantity(limit):
                errors.invalid(
                    child(path, "requests"), str(quantity), f"must be equal to {resource} limit of {limit}"
                )
            elif parse_quantity(quantity) > parse_quantity(limit):
                errors.invalid(
                    child(path, "requests"),
                    str(quantity),
                    f"must be less than or equal to {resource} limit of {limit}",
                )
        elif resource.startswith("hugepages-") or "/" in resource:
            errors.required(child(path, "limits"), "Limit must be set for non overcommitable resources")


def _resource_name(resource: str, path: str, errors: FieldErrors) -> None:
    errors.invalid_each(path, resource, names.qualified_name(resource))
    if resource in _STANDARD_RESOURCES or resource.startswith("hugepages-"):
        return
    if "/" not in resource or resource.split("/", 1)[0].endswith("kubernetes.io"):
        errors.invalid(path, resource, "must be a standard resource for containers")


def validate_security_context(context: dict[str, Any], path: str, errors: FieldErrors) -> None:
    for field in ("runAsUser", "runAsGroup", "fsGroup"):
        value = context.get(field)
        if value is not None and not 0 <= value <= MAX_INT32:
            errors.invalid(child(path, field), value, names.inclusive_range_error(0, MAX_INT32))
    seccomp = context.get("seccompProfile")
    if seccomp is not None:
        kind = seccomp.get("type", "")
        at = child(path, "seccompProfile")
        if kind not in ("Localhost", "RuntimeDefault", "Unconfined"):
            errors.not_supported(child(at, "type"), kind, ["Localhost", "RuntimeDefault", "Unconfined"])
        elif kind == "Localhost" and not seccomp.get("localhostProfile"):
            errors.required(child(at, "localhostProfile"), "must be set when seccomp type is Localhost")
        elif kind != "Localhost" and seccomp.get("localhostProfile"):
            errors.invalid(
                child(at, "localhostProfile"),
                seccomp["localhostProfile"],
                "can only be set when seccomp type is Localhost",
            )
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged"):
            errors.invalid(
                path, context, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
            )
        if "CAP_SYS_ADMIN" in ((context.get("capabilities") or {}).get("add") or []):
            errors.invalid(
                path,
                context,
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            )


def _probe(probe: dict[str, Any], path: str, errors: FieldErrors) -> None:
    _handler(probe, path, errors, lifecycle=False)
    for field in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        value = probe.get(field)
        if value is not None and value < 0:
            errors.invalid(child(path, field), value, "must be greater than or equal to 0")


def _handler(handler: dict[str, Any], path: str, errors: FieldErrors, lifecycle: bool) -> None:
    kinds = (
        ("exec", "httpGet", "tcpSocket", "sleep") if lifecycle else ("exec", "httpGet", "tcpSocket", "grpc")
    )
    present = [k for k in kinds if handler.get(k) is not None]
    if not present:
        errors.required(path, "must specify a handler type")
        return
    for extra in present[1:]:
        errors.forbidden(child(path, extra), "may not specify more than 1 handler type")
    kind, body = present[0], handler[present[0]]
    at = child(path, kind)
    if kind == "exec" and not body.get("command"):
        errors.required(child(at, "command"))
    elif kind in ("httpGet", "tcpSocket"):
        ports.number_or_name(body.get("port"), child(at, "port"), errors)
        if kind == "httpGet" and body.get("scheme", "HTTP") not in ("HTTP", "HTTPS"):
            errors.not_supported(child(at, "scheme"), body["scheme"], ["HTTP", "HTTPS"])
    elif kind == "grpc":
        ports.number(body.get("port", 0), child(at, "port"), errors)
