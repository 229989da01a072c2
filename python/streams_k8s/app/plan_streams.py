"""The streams a plan's PEs exchange with other jobs: the Export of each exporting PE output
port and the Import of each importing PE input port, as the job's Export and Import objects
state them."""

from __future__ import annotations

from collections.abc import Sequence

from streams_k8s.api.spec_values import ExportType
from streams_k8s.app.physical import PeInputPort, PeOutputPort, PlannedPe
from streams_k8s.app.specs import (
    ExportedStream,
    ExportSpec,
    ImportedStreams,
    ImportSpec,
    NameBasedImport,
    PropertyBasedImport,
    StreamProperty,
)
from streams_k8s.app.topology import Topology


class InvalidSubscription(ValueError):
    """An Import operator's subscription expression that does not parse."""


def export_spec(job_id: int, pe: PlannedPe, port: PeOutputPort) -> ExportSpec:
    """What ``port`` exports (its first exported stream: the AADL allows one per port)."""
    operator, spec = port.exports[0]
    by_name = spec.stream_name is not None
    properties = [StreamProperty(name=p.name, type=p.type, values=list(p.values)) for p in spec.properties]
    return ExportSpec(
        job_id=job_id,
        pe_id=pe.id,
        port_id=port.id,
        type=ExportType.BY_NAME if by_name else ExportType.BY_PROPERTIES,
        stream=ExportedStream(
            name=spec.stream_name,
            properties=None if by_name else properties,
            export_oper_name=operator,
            allow_filter=True if spec.allow_filter is None else spec.allow_filter,
            congestion_policy=spec.congestion_policy,
        ),
    )


def import_spec(topo: Topology, job_id: int, pe: PlannedPe, port: PeInputPort) -> ImportSpec | None:
    """What ``port`` imports, or None when it imports nothing."""
    imports = topo.nodes[port.node].imports.get(port.port, ())
    if not imports:
        return None
    by_name = {
        str(index): NameBasedImport(
            application_name=spec.application_name or "",
            import_oper_name=operator,
            stream_name=spec.stream_name or "",
            application_scope=spec.application_scope,
        )
        for operator, index, spec in imports
        if spec.subscription is None
    }
    by_property = [
        PropertyBasedImport(
            subscription=spec.subscription,
            import_oper_name=operator,
            index=index,
            application_scope=spec.application_scope,
        )
        for operator, index, spec in imports
        if spec.subscription is not None
    ]
    return ImportSpec(
        job_id=job_id,
        pe_id=pe.id,
        port_id=port.id,
        port_index=port.id,
        streams=ImportedStreams(
            name_based_imports=by_name,
            property_based_import=by_property[0] if by_property else None,  # the AADL allows one
            filter=next((spec.filter for _, _, spec in imports if spec.filter), None),
        ),
    )


def check_subscriptions(topo: Topology, pes: Sequence[PlannedPe]) -> None:
    """`InvalidSubscription` for the first subscription of an Import operator that does not parse."""
    # The controller checks them, `streams-k8s plan` does not: its start does not load the parser.
    from streams_k8s.app.subscription_expression import SubscriptionError, parse_subscription

    for pe in pes:
        for port in pe.inputs:
            for operator, _, spec in topo.nodes[port.node].imports.get(port.port, ()):
                if spec.subscription is None:
                    continue
                try:
                    parse_subscription(spec.subscription)
                except SubscriptionError as err:
                    message = f"Import operator '{operator}': subscription {spec.subscription!r}: {err}"
                    raise InvalidSubscription(message) from None
