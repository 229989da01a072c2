"""Pods and pod templates: the pod spec rules (containers, ports, env, volumes and their mounts,
resources, probes, security contexts, scheduling fields) and what a pod update may change."""

from __future__ import annotations

from typing import Any

from streams_k8s.api.quantity import parse_quantity
from streams_k8s.sandbox.admission import metadata, names, ports, selectors
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, index, key

_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
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
_MAX_INT32 = 2**31 - 1
_UPDATABLE = ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)


def validate_pod(pod: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(pod["metadata"], names.name_is_dns_subdomain, True, errors)
    spec = pod.get("spec") or {}
    validate_pod_spec(spec, "spec", errors)
    if spec.get("ephemeralContainers"):
        errors.forbidden("spec.ephemeralContainers", "cannot be set on create")
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(kind) or []):
            image = container.get("image", "")
            if image != image.strip():
                errors.invalid(
                    child(index(child("spec", kind), i), "image"),
                    image,
                    "must not have leading or trailing whitespace",
                )


def validate_pod_update(pod: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(pod["metadata"], old["metadata"], errors)
    validate_pod(pod, errors)
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for kind in ("containers", "initContainers"):
        if len(spec.get(kind) or []) != len(old_spec.get(kind) or []):
            errors.forbidden(child("spec", kind), "pod updates may not add or remove containers")
            return
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if old_deadline is not None and (deadline is None or deadline > old_deadline):
        errors.invalid("spec.activeDeadlineSeconds", deadline, "must be less than or equal to previous value")
    old_tolerations = old_spec.get("tolerations") or []
    if any(t not in (spec.get("tolerations") or []) for t in old_tolerations):
        errors.forbidden(
            "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
        )
    if _mutable_fields_removed(spec) != _mutable_fields_removed(old_spec):
        errors.forbidden("spec", f"pod updates may not change fields other than {_UPDATABLE}")


def _mutable_fields_removed(spec: dict[str, Any]) -> dict[str, Any]:
    out = {
        k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations", "schedulingGates")
    }
    if (spec.get("terminationGracePeriodSeconds") or 0) <= 1:
        out.pop("terminationGracePeriodSeconds", None)
    for kind in ("containers", "initContainers"):
        if kind in out:
            out[kind] = [{k: v for k, v in c.items() if k != "image"} for c in out[kind]]
    return out


def validate_pod_status_update(pod: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(pod["metadata"], old["metadata"], errors)
    status = pod.get("status") or {}
    for field in ("podIP", "hostIP"):
        if status.get(field):
            errors.invalid_each(child("status", field), status[field], names.ip_address(status[field]))
    for field in ("podIPs", "hostIPs"):
        for i, entry in enumerate(status.get(field) or []):
            ip = entry.get("ip", "")
            errors.invalid_each(child(index(child("status", field), i), "ip"), ip, names.ip_address(ip))


def validate_template(template: dict[str, Any], path: str, errors: FieldErrors) -> None:
    """A workload's pod template: its labels and annotations, and the pod spec."""
    meta = template.get("metadata") or {}
    metadata.validate_labels(meta.get("labels"), child(child(path, "metadata"), "labels"), errors)
    metadata.validate_annotations(
        meta.get("annotations"), child(child(path, "metadata"), "annotations"), errors
    )
    spec = template.get("spec") or {}
    validate_pod_spec(spec, child(path, "spec"), errors)
    if spec.get("ephemeralContainers"):
        errors.forbidden(
            child(child(path, "spec"), "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        )


def validate_pod_spec(spec: dict[str, Any], path: str, errors: FieldErrors) -> None:
    volumes = _volumes(spec.get("volumes") or [], child(path, "volumes"), errors)
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    if not containers:
        errors.required(child(path, "containers"))
    seen: set[str] = set()
    for kind, items in (("containers", containers), ("initContainers", init_containers)):
        for i, container in enumerate(items):
            at = index(child(path, kind), i)
            _container(container, volumes, at, errors, liveness_once=kind == "containers")
            container_name = container.get("name", "")
            if container_name in seen:
                errors.duplicate(child(at, "name"), container_name)
            seen.add(container_name)
            if not container.get("image"):
                errors.required(child(at, "image"))
    _choice(spec.get("restartPolicy"), _RESTART_POLICIES, child(path, "restartPolicy"), errors)
    _choice(spec.get("dnsPolicy"), _DNS_POLICIES, child(path, "dnsPolicy"), errors)
    if spec.get("dnsPolicy") == "None" and not (spec.get("dnsConfig") or {}).get("nameservers"):
        errors.required(
            child(child(path, "dnsConfig"), "nameservers"),
            "must provide at least one DNS nameserver when dnsPolicy is None",
        )
    metadata.validate_labels(spec.get("nodeSelector"), child(path, "nodeSelector"), errors)
    for field, check in (
        ("serviceAccountName", names.dns1123_subdomain),
        ("nodeName", names.dns1123_subdomain),
        ("priorityClassName", names.dns1123_subdomain),
        ("hostname", names.dns1123_label),
        ("subdomain", names.dns1123_label),
    ):
        if spec.get(field):
            errors.invalid_each(child(path, field), spec[field], check(spec[field]))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        errors.invalid(
            child(path, "activeDeadlineSeconds"), deadline, names.inclusive_range_error(1, _MAX_INT32)
        )
    selectors.tolerations(spec.get("tolerations") or [], child(path, "tolerations"), errors)
    _affinity(spec.get("affinity") or {}, child(path, "affinity"), errors)
    _security_context(spec.get("securityContext") or {}, child(path, "securityContext"), errors)
    for i, secret in enumerate(spec.get("imagePullSecrets") or []):
        if not secret.get("name"):
            errors.required(child(index(child(path, "imagePullSecrets"), i), "name"))


def _choice(value: str | None, allowed: list[str], path: str, errors: FieldErrors) -> None:
    if value is None:
        return
    if value == "":
        errors.required(path)
    elif value not in allowed:
        errors.not_supported(path, value, allowed)


# -- volumes ------------------------------------------------------------------------------------


def _volumes(volumes: list[dict[str, Any]], path: str, errors: FieldErrors) -> set[str]:
    """Validate the pod's volumes; returns the names volume mounts may refer to."""
    valid: set[str] = set()
    seen: set[str] = set()
    for i, volume in enumerate(volumes):
        at = index(path, i)
        found = FieldErrors()
        _volume_source(volume, at, found)
        name = volume.get("name", "")
        if not name:
            found.required(child(at, "name"))
        else:
            found.invalid_each(child(at, "name"), name, names.dns1123_label(name))
        if name in seen:
            found.duplicate(child(at, "name"), name)
        seen.add(name)
        if found:
            errors.extend(found)
        else:
            valid.add(name)
    return valid


def _volume_source(volume: dict[str, Any], path: str, errors: FieldErrors) -> None:
    sources = [k for k in volume if k != "name"]
    if not sources:
        errors.required(path, "must specify a volume type")
        return
    for extra in sources[1:]:
        errors.forbidden(child(path, extra), "may not specify more than 1 volume type")
    source, body = sources[0], volume[sources[0]] or {}
    at = child(path, source)
    if source == "configMap":
        if not body.get("name"):
            errors.required(child(at, "name"))
        _key_to_paths(body, at, errors)
    elif source == "secret":
        if not body.get("secretName"):
            errors.required(child(at, "secretName"))
        _key_to_paths(body, at, errors)
    elif source == "persistentVolumeClaim":
        if not body.get("claimName"):
            errors.required(child(at, "claimName"))
    elif source == "hostPath":
        if not body.get("path"):
            errors.required(child(at, "path"))
    elif source == "emptyDir":
        if body.get("medium", "") not in ("", "Memory", "HugePages"):
            errors.not_supported(child(at, "medium"), body["medium"], ["", "Memory", "HugePages"])
    elif source == "downwardAPI":
        _file_mode(body.get("defaultMode"), child(at, "defaultMode"), errors)
        for i, item in enumerate(body.get("items") or []):
            _relative_path(item.get("path", ""), child(index(child(at, "items"), i), "path"), errors)


def _key_to_paths(body: dict[str, Any], path: str, errors: FieldErrors) -> None:
    _file_mode(body.get("defaultMode"), child(path, "defaultMode"), errors)
    for i, item in enumerate(body.get("items") or []):
        at = index(child(path, "items"), i)
        if not item.get("key"):
            errors.required(child(at, "key"))
        _relative_path(item.get("path", ""), child(at, "path"), errors)
        _file_mode(item.get("mode"), child(at, "mode"), errors)


def _file_mode(mode: int | None, path: str, errors: FieldErrors) -> None:
    if mode is not None and not 0 <= mode <= 0o777:
        errors.invalid(path, mode, "must be a number between 0 and 0777 (octal), both inclusive")


def _relative_path(value: str, path: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(path)
        return
    if value.startswith("/"):
        errors.invalid(path, value, "must be a relative path")
    if ".." in value.split("/"):
        errors.invalid(path, value, "must not contain '..'")


# -- containers ---------------------------------------------------------------------------------


def _container(
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
    _choice(container.get("imagePullPolicy"), _PULL_POLICIES, child(path, "imagePullPolicy"), errors)
    policy = container.get("terminationMessagePolicy")
    if policy is not None and policy not in ("File", "FallbackToLogsOnError"):
        errors.invalid(
            child(path, "terminationMessagePolicy"), policy, "must be 'File' or 'FallbackToLogsOnError'"
        )
    _resources(container.get("resources") or {}, child(path, "resources"), errors)
    _security_context(container.get("securityContext") or {}, child(path, "securityContext"), errors)
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


def _field_ref(ref: dict[str, Any], path: str, errors: FieldErrors) -> None:
    if not ref.get("apiVersion"):
        errors.required(child(path, "apiVersion"))
        return
    field_path = ref.get("fieldPath", "")
    if not field_path:
        errors.required(child(path, "fieldPath"))
        return
    if field_path.endswith("']") and "['" in field_path:
        base, subscript = field_path[:-2].split("['", 1)
        if base == "metadata.annotations":
            errors.invalid_each(path, subscript.lower(), names.qualified_name(subscript.lower()))
        elif base == "metadata.labels":
            errors.invalid_each(path, subscript, names.qualified_name(subscript))
        else:
            errors.invalid(path, base, "does not support subscript")
    elif field_path not in _ENV_FIELD_PATHS:
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
            _relative_path(mount["subPath"], child(path, "subPath"), errors)
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


def _security_context(context: dict[str, Any], path: str, errors: FieldErrors) -> None:
    for field in ("runAsUser", "runAsGroup", "fsGroup"):
        value = context.get(field)
        if value is not None and not 0 <= value <= _MAX_INT32:
            errors.invalid(child(path, field), value, names.inclusive_range_error(0, _MAX_INT32))
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


def _affinity(affinity: dict[str, Any], path: str, errors: FieldErrors) -> None:
    node = affinity.get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    node_path = child(path, "nodeAffinity")
    if required is not None:
        at = child(child(node_path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms")
        terms = required.get("nodeSelectorTerms") or []
        if not terms:
            errors.required(at, "must have at least one node selector term")
        for i, term in enumerate(terms):
            selectors.node_selector_term(term, index(at, i), errors)
    for i, preferred in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        at = index(child(node_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
        _weight(preferred.get("weight", 0), child(at, "weight"), errors)
        selectors.node_selector_term(preferred.get("preference") or {}, child(at, "preference"), errors)
    for kind in ("podAffinity", "podAntiAffinity"):
        pod_affinity = affinity.get(kind) or {}
        kind_path = child(path, kind)
        for i, term in enumerate(pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            _pod_affinity_term(
                term, index(child(kind_path, "requiredDuringSchedulingIgnoredDuringExecution"), i), errors
            )
        for i, weighted in enumerate(
            pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ):
            at = index(child(kind_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
            _weight(weighted.get("weight", 0), child(at, "weight"), errors)
            _pod_affinity_term(weighted.get("podAffinityTerm") or {}, child(at, "podAffinityTerm"), errors)


def _weight(weight: int, path: str, errors: FieldErrors) -> None:
    if not 1 <= weight <= 100:
        errors.invalid(path, weight, "must be in the range 1-100")


def _pod_affinity_term(term: dict[str, Any], path: str, errors: FieldErrors) -> None:
    selectors.label_selector(term.get("labelSelector"), child(path, "labelSelector"), errors)
    selectors.label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector"), errors)
    for namespace in term.get("namespaces") or []:
        errors.invalid_each(child(path, "namespace"), namespace, names.dns1123_label(namespace))
    topology_key = term.get("topologyKey", "")
    if not topology_key:
        errors.required(child(path, "topologyKey"), "can not be empty")
    else:
        errors.invalid_each(child(path, "topologyKey"), topology_key, names.qualified_name(topology_key))
