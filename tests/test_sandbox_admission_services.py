"""Services, Endpoints and EndpointSlices over HTTP, on the sandbox and on kube-apiserver
(`writes_fixture`), validated as kube-apiserver does: DNS-1035 service names, service ports
(DNS-label names, numbers, protocols, target ports), the allocated cluster IP on update, endpoint
addresses and the EndpointSlice address type."""

from __future__ import annotations

from typing import Any

import pytest

from api_writes import Writes

pytest_plugins = ["writes_fixture"]

SERVICES = "/api/v1/namespaces/{namespace}/services"
ENDPOINTS = "/api/v1/namespaces/{namespace}/endpoints"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"


def service(name: str, *ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": list(ports), **spec},
    }


async def test_service_names_are_dns_1123_labels(writes: Writes) -> None:
    # DNS-1123 labels since Kubernetes 1.36 (RelaxedServiceNameValidation): a digit may lead.
    assert (await writes.create(SERVICES, service("1pe", {"port": 80}))).status == 201
    reply = await writes.create(SERVICES, service("Pe", {"port": 80}))
    assert reply.status == 422
    assert reply.causes == [
        (
            "metadata.name",
            'Invalid value: "Pe": a lowercase RFC 1123 label must consist of lower case alphanumeric '
            "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
            "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        )
    ]
    long_name = "s" * 64
    reply = await writes.create(SERVICES, service(long_name, {"port": 80}))
    assert reply.causes == [
        ("metadata.name", f'Invalid value: "{long_name}": must be no more than 63 characters'),
        ("spec.selector", f'Invalid value: "{long_name}": must be no more than 63 bytes'),
    ]


async def test_service_port_names_are_dns_labels_not_iana_names(writes: Writes) -> None:
    ports = [
        {"name": "sys-notifications", "port": 10000, "protocol": "UDP"},  # 17 characters: fine for a Service
        {"name": "sys-consistentregion", "port": 10001, "protocol": "UDP", "targetPort": "sys-cr-notify"},
    ]
    assert (await writes.create(SERVICES, service("pe", *ports))).status == 201
    reply = await writes.create(
        SERVICES,
        service(
            "bad",
            {"name": "Web", "port": 80},
            {"port": 80},
            {"name": "x", "port": 0, "targetPort": "sys-notifications"},
        ),
    )
    assert reply.status == 422
    assert [field for field, _ in reply.causes] == [
        "spec.ports[0].name",
        "spec.ports[1].name",
        "spec.ports[2].port",
        "spec.ports[2].targetPort",
        "spec.ports[1]",
    ]
    assert reply.causes[1] == ("spec.ports[1].name", "Required value")  # several ports: each named
    assert reply.causes[3] == (
        "spec.ports[2].targetPort",
        'Invalid value: "sys-notifications": must be no more than 15 characters',
    )
    assert reply.causes[4][1] == (
        'Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,'
        '"NodePort":0}'
    )  # the internal Go struct, as encoding/json prints it


async def test_headless_services_need_no_ports_and_cluster_ips_must_be_ips(writes: Writes) -> None:
    assert (await writes.create(SERVICES, service("headless", clusterIP="None"))).status == 201
    reply = await writes.create(SERVICES, service("noports"))
    assert reply.causes == [("spec.ports", "Required value")]
    reply = await writes.create(SERVICES, service("odd", {"port": 80}, clusterIP="10.96.0.300"))
    assert reply.causes == [  # the API server fills clusterIPs from clusterIP first
        (
            "spec.clusterIPs[0]",
            'Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
        )
    ]


async def test_cluster_ip_is_immutable_and_kept_when_an_update_leaves_it_out(writes: Writes) -> None:
    created = await writes.create(SERVICES, service("svc", {"port": 80}))
    ip = created.body["spec"]["clusterIP"]
    replaced = await writes.replace(f"{SERVICES}/svc", service("svc", {"port": 81}))
    assert replaced.status == 200, replaced.body
    assert replaced.body["spec"]["clusterIP"] == ip
    assert replaced.body["spec"]["clusterIPs"] == [ip]
    moved = await writes.patch(f"{SERVICES}/svc", {"spec": {"clusterIP": "10.96.0.99", "clusterIPs": None}})
    assert moved.status == 422
    assert moved.causes == [("spec.clusterIPs[0]", 'Invalid value: ["10.96.0.99"]: may not change once set')]


@pytest.mark.sandbox(simulate=False)
async def test_endpoints_addresses_and_ports(writes: Writes) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "svc"},
        "subsets": [
            {
                # 127.244.1.5: a loopback address, as the sandbox's pods once had (issue 31)
                "addresses": [{"ip": "127.0.0.1"}, {"ip": "127.244.1.5"}, {"ip": "10.0.0.300"}],
                "ports": [{"name": "a", "port": 80}, {"port": 81}],
            },
            {"ports": [{"port": 82}]},
        ],
    }
    reply = await writes.create(ENDPOINTS, body)
    assert reply.status == 422
    loopback = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
    assert reply.causes == [
        ("subsets[0].addresses[0].ip", f'Invalid value: "127.0.0.1": {loopback}'),
        ("subsets[0].addresses[1].ip", f'Invalid value: "127.244.1.5": {loopback}'),
        (
            "subsets[0].addresses[2].ip",
            'Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
        ),
        ("subsets[0].addresses[2].ip", 'Invalid value: "10.0.0.300": must be a valid IP address'),
        ("subsets[0].ports[1].name", "Required value"),
        ("subsets[1]", "Required value: must specify `addresses` or `notReadyAddresses`"),
    ]
    assert reply.warnings == [
        '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'
    ]


async def test_endpoint_slices_address_type_is_checked_and_immutable(writes: Writes) -> None:
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "svc-abc", "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 80}],
    }
    created = await writes.create(SLICES, body)
    assert created.status == 201, created.body
    assert created.body["ports"][0]["protocol"] == "TCP"
    reply = await writes.patch(
        f"{SLICES}/svc-abc", {"addressType": "IPv6", "endpoints": [{"addresses": ["::5"]}]}
    )
    assert reply.status == 422
    assert reply.causes == [("addressType", "Invalid value: null: field is immutable")]
    bad = {
        **body,
        "metadata": {"name": "svc-bad"},
        "endpoints": [{"addresses": ["fe80::1"]}, {"addresses": []}, {"addresses": ["127.244.1.5"]}],
    }
    reply = await writes.create(SLICES, bad)
    assert reply.causes == [  # declarative rules (the Required) come last
        ("endpoints[0].addresses", 'Invalid value: "fe80::1": must be an IPv4 address'),
        (
            "endpoints[0].addresses[0]",
            'Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
        ),
        (
            "endpoints[2].addresses[0]",
            'Invalid value: "127.244.1.5": may not be in the loopback range (127.0.0.0/8, ::1/128)',
        ),
        ("endpoints[1].addresses", "Required value"),
    ]


async def test_external_name_services_have_no_cluster_ip(writes: Writes) -> None:
    alias = {"type": "ExternalName", "externalName": "db.example.com."}
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"}, "spec": alias}
    created = await writes.create(SERVICES, body)
    assert created.status == 201, created.body
    assert "clusterIP" not in created.body["spec"]
    bad = {
        **body,
        "metadata": {"name": "bad"},
        "spec": {"type": "ExternalName", "externalName": "Not_A_Host"},
    }
    reply = await writes.create(SERVICES, bad)
    assert [field for field, _ in reply.causes] == ["spec.externalName"]
