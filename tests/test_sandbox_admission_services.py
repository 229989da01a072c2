"""Services, Endpoints and EndpointSlices through the sandbox's HTTP API, validated as by
kube-apiserver: DNS-1035 service names, service ports (DNS-label names, numbers, protocols, target
ports), the allocated cluster IP on update, endpoint addresses and the EndpointSlice address type."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox_writes import Writes

pytest_plugins = ["writes_fixture"]

SERVICES = "/api/v1/namespaces/default/services"
ENDPOINTS = "/api/v1/namespaces/default/endpoints"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"


def service(name: str, *ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": list(ports), **spec},
    }


async def test_service_names_are_dns_1035_labels(writes: Writes) -> None:
    reply = await writes.create(SERVICES, service("1pe", {"port": 80}))
    assert reply.status == 422
    assert reply.causes == [
        (
            "metadata.name",
            'Invalid value: "1pe": a DNS-1035 label must consist of lower case alphanumeric characters or '
            "'-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
            "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        )
    ]
    long_name = "s" * 64
    reply = await writes.create(SERVICES, service(long_name, {"port": 80}))
    assert (
        "metadata.name",
        f'Invalid value: "{long_name}": must be no more than 63 characters',
    ) in reply.causes


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
    assert reply.causes[4][1].startswith('Duplicate value: core.ServicePort{Name:"", Protocol:"TCP"')


async def test_headless_services_need_no_ports_and_cluster_ips_must_be_ips(writes: Writes) -> None:
    assert (await writes.create(SERVICES, service("headless", clusterIP="None"))).status == 201
    reply = await writes.create(SERVICES, service("noports"))
    assert reply.causes == [("spec.ports", "Required value")]
    reply = await writes.create(SERVICES, service("odd", {"port": 80}, clusterIP="10.96.0.300"))
    assert reply.causes == [
        ("spec.clusterIP", "Invalid value: \"10.96.0.300\": must be empty, 'None', or a valid IP address")
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
    assert moved.causes[0] == ("spec.clusterIP", 'Invalid value: "10.96.0.99": field is immutable')


@pytest.mark.sandbox(simulate=False)
async def test_endpoints_addresses_and_ports(writes: Writes) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "svc"},
        "subsets": [
            {
                "addresses": [{"ip": "127.0.0.1"}, {"ip": "10.0.0.300"}],
                "ports": [{"name": "a", "port": 80}, {"port": 81}],
            },
            {"ports": [{"port": 82}]},
        ],
    }
    reply = await writes.create(ENDPOINTS, body)
    assert reply.status == 422
    assert reply.causes == [
        (
            "subsets[0].addresses[0].ip",
            'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
        ),
        (
            "subsets[0].addresses[1].ip",
            'Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
        ),
        ("subsets[0].ports[1].name", "Required value"),
        ("subsets[1]", "Required value: must specify `addresses` or `notReadyAddresses`"),
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
    assert ("addressType", 'Invalid value: "IPv6": field is immutable') in reply.causes
    bad = {
        **body,
        "metadata": {"name": "svc-bad"},
        "endpoints": [{"addresses": ["fe80::1"]}, {"addresses": []}],
    }
    reply = await writes.create(SLICES, bad)
    assert reply.causes == [
        ("endpoints[0].addresses[0]", 'Invalid value: "fe80::1": must be a valid IPv4 address'),
        ("endpoints[1].addresses", "Required value: must contain at least 1 address"),
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
