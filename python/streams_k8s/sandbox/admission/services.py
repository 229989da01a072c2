"""Services, Endpoints and EndpointSlices: ports (DNS-label names, numbers, protocols, target ports),
cluster IPs and what an update may change, endpoint addresses."""

from __future__ import annotations

import ipaddress
from typing import Any

from streams_k8s.sandbox.admission import metadata, names, ports
from streams_k8s.sandbox.admission.field_errors import FieldErrors, child, go_struct, index
from streams_k8s.sandbox.errors import cause

_SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
_AFFINITIES = ["ClientIP", "None"]
_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
_MAX_SLICE_ENDPOINTS = 1000
_MAX_SLICE_ADDRESSES = 100
_MAX_SLICE_PORTS = 20000
_LINK_LOCAL_MULTICAST = (ipaddress.ip_network("224.0.0.0/24"), ipaddress.ip_network("ff02::/16"))


def validate_service(service: dict[str, Any], errors: FieldErrors) -> None:
    # DNS-1123 labels since 1.36 (RelaxedServiceNameValidation): a name may start with a digit
    metadata.validate(service["metadata"], names.name_is_dns_label, True, errors)
    spec = service.get("spec") or {}
    service_ports = spec.get("ports") or []
    kind = spec.get("type", "ClusterIP")
    cluster_ip = spec.get("clusterIP", "")
    headless = cluster_ip == "None"
    if not service_ports and not headless and kind != "ExternalName":
        errors.required("spec.ports")
    if kind in ("LoadBalancer", "NodePort") and headless:
        errors.invalid("spec.clusterIP", cluster_ip, f"may not be set to 'None' for {kind} services")
    if kind == "ExternalName":
        if cluster_ip:
            errors.forbidden("spec.clusterIP", "must be empty for ExternalName services")
        external = spec.get("externalName", "")
        if external:
            errors.invalid_each(
                "spec.externalName", external, names.dns1123_subdomain(external.removesuffix("."))
            )
        else:
            errors.required("spec.externalName")
    seen_names: set[str] = set()
    for i, port in enumerate(service_ports):
        _service_port(port, len(service_ports) > 1, seen_names, index("spec.ports", i), errors)
        if kind == "ClusterIP" and port.get("nodePort"):
            errors.forbidden(
                child(index("spec.ports", i), "nodePort"), "may not be used when `type` is 'ClusterIP'"
            )
    seen_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(service_ports):
        pair = (port.get("protocol", "TCP"), port.get("port", 0))
        if pair in seen_ports:
            errors.duplicate(
                index("spec.ports", i),
                go_struct(
                    Name="", Protocol=pair[0], AppProtocol=None, Port=pair[1], TargetPort=0, NodePort=0
                ),
            )
        seen_ports.add(pair)
    if spec.get("selector") is not None:
        metadata.validate_labels(spec["selector"], "spec.selector", errors)
    affinity = spec.get("sessionAffinity", "None")
    if affinity not in _AFFINITIES:
        errors.not_supported("spec.sessionAffinity", affinity, _AFFINITIES)
    if kind != "ExternalName":
        for i, ip in enumerate(_cluster_ips(spec)):
            if not (i == 0 and ip == "None"):
                errors.invalid_each(index("spec.clusterIPs", i), ip, names.ip_address(ip))
    for i, ip in enumerate(spec.get("externalIPs") or []):
        errors.invalid_each(index("spec.externalIPs", i), ip, names.ip_address(ip))
    if kind not in _SERVICE_TYPES:
        errors.not_supported("spec.type", kind, _SERVICE_TYPES)


def _service_port(
    port: dict[str, Any], require_name: bool, seen: set[str], path: str, errors: FieldErrors
) -> None:
    name = _named_port(port, require_name, path, errors)
    if name and name in seen:
        errors.duplicate(child(path, "name"), name)
    seen.add(name)
    ports.number_or_name(port.get("targetPort", port.get("port", 0)), child(path, "targetPort"), errors)


def _named_port(port: dict[str, Any], require_name: bool, path: str, errors: FieldErrors) -> str:
    """A Service or Endpoints port: a DNS-label name (required when there are several), a number
    and a protocol. Returns the name."""
    name = str(port.get("name", ""))
    if require_name and not name:
        errors.required(child(path, "name"))
    elif name:
        errors.invalid_each(child(path, "name"), name, names.dns1123_label(name))
    ports.number(port.get("port", 0), child(path, "port"), errors)
    ports.protocol(port.get("protocol", ""), child(path, "protocol"), errors)
    return name


def _cluster_ips(spec: dict[str, Any]) -> list[str]:
    """`clusterIPs`, or the one `clusterIP` an older client sets (the API server fills one from
    the other before it validates)."""
    cluster_ip = spec.get("clusterIP")
    return list(spec.get("clusterIPs") or ([cluster_ip] if cluster_ip else []))


def validate_service_update(service: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(service["metadata"], old["metadata"], errors)
    spec, old_spec = service.get("spec") or {}, old.get("spec") or {}
    kinds = (spec.get("type"), old_spec.get("type"))
    headless = spec.get("clusterIP") == "None" and old_spec.get("clusterIP") == "None"
    if "ExternalName" not in kinds and not headless:
        new_ips, old_ips = _cluster_ips(spec), _cluster_ips(old_spec)
        for i, ip in enumerate(old_ips):
            if (new_ips[i] if i < len(new_ips) else None) != ip:
                errors.invalid(index("spec.clusterIPs", i), new_ips, "may not change once set")
                break
    validate_service(service, errors)


def keep_allocated(service: dict[str, Any], old: dict[str, Any]) -> None:
    """An update that leaves out the allocated cluster IP keeps it (as kube-apiserver's REST storage
    does), unless the Service becomes or stops being an ExternalName; one that changes
    `clusterIP` alone asks for that address in `clusterIPs` too."""
    spec, old_spec = service.setdefault("spec", {}), old.get("spec") or {}
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
    if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
        same = spec.get("clusterIP") == old_spec.get("clusterIP")
        spec["clusterIPs"] = old_spec["clusterIPs"] if same else [spec["clusterIP"]]


# -- Endpoints ------------------------------------------------------------------------------------


def validate_endpoints(endpoints: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(endpoints["metadata"], names.name_is_dns_subdomain, True, errors)
    for i, subset in enumerate(endpoints.get("subsets") or []):
        at = index("subsets", i)
        addresses = subset.get("addresses") or []
        not_ready = subset.get("notReadyAddresses") or []
        if not addresses and not not_ready:
            errors.required(at, "must specify `addresses` or `notReadyAddresses`")
        for kind, items in (("addresses", addresses), ("notReadyAddresses", not_ready)):
            for j, address in enumerate(items):
                _endpoint_address(address, index(child(at, kind), j), errors)
        subset_ports = subset.get("ports") or []
        for j, port in enumerate(subset_ports):
            _named_port(port, len(subset_ports) > 1, index(child(at, "ports"), j), errors)


def validate_endpoints_update(endpoints: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(endpoints["metadata"], old["metadata"], errors)
    validate_endpoints(endpoints, errors)


def _endpoint_address(address: dict[str, Any], path: str, errors: FieldErrors) -> None:
    ip = address.get("ip", "")
    errors.invalid_each(child(path, "ip"), ip, names.ip_address(ip))
    if address.get("hostname"):
        errors.invalid_each(
            child(path, "hostname"), address["hostname"], names.dns1123_label(address["hostname"])
        )
    if address.get("nodeName"):
        errors.invalid_each(
            child(path, "nodeName"), address["nodeName"], names.dns1123_subdomain(address["nodeName"])
        )
    _endpoint_ip(ip, child(path, "ip"), errors)


def _endpoint_ip(ip: str, path: str, errors: FieldErrors) -> None:
    """What an endpoint may not be (kube-apiserver's ValidateEndpointIP): loopback addresses
    included, so a cluster's pods never get them."""
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        errors.invalid(path, ip, "must be a valid IP address")
        return
    if parsed.is_unspecified:
        errors.invalid(path, ip, f"may not be unspecified ({ip})")
    if parsed.is_loopback:
        errors.invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if parsed.is_link_local:
        errors.invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    if any(parsed in network for network in _LINK_LOCAL_MULTICAST):
        errors.invalid(path, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")


# -- EndpointSlices -------------------------------------------------------------------------------


def validate_endpoint_slice(slice_: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate(slice_["metadata"], names.name_is_dns_subdomain, True, errors)
    address_type = slice_.get("addressType", "")
    if not address_type:
        errors.required("addressType")
    elif address_type not in _ADDRESS_TYPES:
        errors.not_supported("addressType", address_type, _ADDRESS_TYPES)
    endpoints = slice_.get("endpoints") or []
    if len(endpoints) > _MAX_SLICE_ENDPOINTS:
        errors.too_many("endpoints", len(endpoints), _MAX_SLICE_ENDPOINTS)
    for i, endpoint in enumerate(endpoints):
        at = index("endpoints", i)
        addresses = endpoint.get("addresses") or []
        if not addresses:  # a declarative rule since 1.37
            errors.declarative.append(cause(child(at, "addresses"), "Required value", "FieldValueRequired"))
        elif len(addresses) > _MAX_SLICE_ADDRESSES:
            errors.too_many(child(at, "addresses"), len(addresses), _MAX_SLICE_ADDRESSES)
        for j, address in enumerate(addresses):
            _slice_address(address, address_type, child(at, "addresses"), j, errors)
        if endpoint.get("hostname"):
            errors.invalid_each(
                child(at, "hostname"), endpoint["hostname"], names.dns1123_label(endpoint["hostname"])
            )
        if endpoint.get("nodeName"):
            errors.invalid_each(
                child(at, "nodeName"), endpoint["nodeName"], names.dns1123_subdomain(endpoint["nodeName"])
            )
    slice_ports = slice_.get("ports") or []
    if len(slice_ports) > _MAX_SLICE_PORTS:
        errors.too_many("ports", len(slice_ports), _MAX_SLICE_PORTS)
    seen: set[str] = set()
    for i, port in enumerate(slice_ports):
        at = index("ports", i)
        name = port.get("name") or ""
        if name:
            errors.invalid_each(child(at, "name"), name, names.dns1123_label(name))
        if name in seen:
            errors.duplicate(child(at, "name"), name)
        seen.add(name)
        ports.protocol(port.get("protocol", ""), child(at, "protocol"), errors)
        if port.get("port") is not None:
            ports.number(port["port"], child(at, "port"), errors)


def _slice_address(address: str, address_type: str, at: str, i: int, errors: FieldErrors) -> None:
    """Address `i` of the endpoint's `addresses` (at `at`); a family mismatch is reported on the
    list, as kube-apiserver does."""
    path = index(at, i)
    if address_type in ("IPv4", "IPv6"):
        messages = names.ip_address(address)
        if messages:
            errors.invalid_each(path, address, messages)
            return
        version = 4 if address_type == "IPv4" else 6
        if ipaddress.ip_address(address).version != version:
            errors.invalid(at, address, f"must be an {address_type} address")
        _endpoint_ip(address, path, errors)
    elif address_type == "FQDN":
        errors.invalid_each(path, address, names.dns1123_subdomain(address))


def validate_endpoint_slice_update(slice_: dict[str, Any], old: dict[str, Any], errors: FieldErrors) -> None:
    metadata.validate_update(slice_["metadata"], old["metadata"], errors)
    validate_endpoint_slice(slice_, errors)
    if slice_.get("addressType") != old.get("addressType"):  # declarative since 1.37, worded so
        errors.declarative.append(cause("addressType", "Invalid value: null: field is immutable"))
