"""HostPool: an SPL host pool of a job, mapped onto cluster nodes."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from streams_k8s.api.base import PrinterColumn, Resource, Status, WireModel
from streams_k8s.api.spec_values import MembershipMode


class HostPoolSpec(WireModel):
    name: Annotated[str, Field(min_length=1, description="SPL pool name; $default for the default pool.")]
    index: Annotated[int, Field(ge=0)]
    hosts: list[str] = Field(default_factory=list, description="Explicit host names or IPs.")
    tags: list[str] = Field(default_factory=list)
    membership_mode: MembershipMode = MembershipMode.SHARED
    size: Annotated[int, Field(ge=1)] | None = None


class HostPoolStatus(Status):
    nodes: list[str] = Field(default_factory=list, description="Nodes chosen for the pool.")


class HostPool(Resource):
    kind_name: ClassVar[str] = "HostPool"
    plural: ClassVar[str] = "streamshostpools"
    singular: ClassVar[str] = "streamshostpool"
    short_names: ClassVar[tuple[str, ...]] = ("sthp",)
    description: ClassVar[str] = "An SPL host pool of a job."
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn(name="Pool", type="string", json_path=".spec.name"),
        PrinterColumn(name="Size", type="integer", json_path=".spec.size"),
        PrinterColumn(name="Mode", type="string", json_path=".spec.membershipMode"),
    )

    kind: Literal["HostPool"] = "HostPool"
    spec: HostPoolSpec
    status: HostPoolStatus | None = None
