"""The one list of a PE's ports, as its pod's container and its headless Service both state them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams_k8s.api.contract import (
    CONSISTENT_REGION_CONTAINER_PORT_NAME,
    CONSISTENT_REGION_PORT,
    CONSISTENT_REGION_PORT_NAME,
    METRICS_PORT,
    METRICS_PORT_NAME,
    NOTIFICATIONS_CONTAINER_PORT_NAME,
    NOTIFICATIONS_PORT,
    NOTIFICATIONS_PORT_NAME,
    PE_PORT_BASE,
    input_port_name,
)


@dataclass(frozen=True, slots=True)
class PePort:
    """One port: its name on the Service and on the container (an IANA service name, at most 15
    characters: the contract's longer Service names have shorter twins), number and protocol."""

    service_name: str
    container_name: str
    number: int
    protocol: str


def pe_ports(input_ports: int) -> list[PePort]:
    """Every port of a PE with ``input_ports`` input ports: one per input port (``sys-<i>``, TCP
    10000 + i), then metrics, subscription notifications and consistent-region notifications."""
    inputs = [
        PePort(input_port_name(i), input_port_name(i), PE_PORT_BASE + i, "TCP") for i in range(input_ports)
    ]
    return [
        *inputs,
        PePort(METRICS_PORT_NAME, METRICS_PORT_NAME, METRICS_PORT, "TCP"),
        PePort(NOTIFICATIONS_PORT_NAME, NOTIFICATIONS_CONTAINER_PORT_NAME, NOTIFICATIONS_PORT, "UDP"),
        PePort(
            CONSISTENT_REGION_PORT_NAME, CONSISTENT_REGION_CONTAINER_PORT_NAME, CONSISTENT_REGION_PORT, "UDP"
        ),
    ]


def service_ports(input_ports: int) -> list[dict[str, Any]]:
    """The ports of the PE's Service (each targets the container port of the same number)."""
    return [{"name": p.service_name, "port": p.number, "protocol": p.protocol} for p in pe_ports(input_ports)]


def container_ports(input_ports: int) -> list[dict[str, Any]]:
    """The ports of the PE's container."""
    return [
        {"name": p.container_name, "containerPort": p.number, "protocol": p.protocol}
        for p in pe_ports(input_ports)
    ]
