"""The per-PE AADL (``augmentedPE``, valid against ``augmentedApplicationModel.xsd``), rendered by
the native core (``rust/aadl``) straight from the plan's objects.

Serialised on one line without insignificant whitespace, with attributes in a fixed order, so
the same PE always gives the same bytes and its sha256 is a stable content id. The bytes are
lxml's for the same tree (``tests/aadl_oracle.py`` holds the lxml writer they are checked
against).
"""

from __future__ import annotations

from collections.abc import Sequence

from streams_k8s._native import AadlError, render_aadl
from streams_k8s.app.physical import PlannedPe, PortIndex
from streams_k8s.app.submission import spl_literal
from streams_k8s.app.topology import Topology

__all__ = ["AadlError", "pe_aadls"]


def pe_aadls(
    topo: Topology, pes: Sequence[PlannedPe], ports: PortIndex, *, job_name: str, job_id: int
) -> list[str]:
    """The AADL document of each of ``pes``, as single-line strings.

    Raises AadlError for a string XML cannot hold (a submission-time value with a control
    character)."""
    values = topo.app.submission_time_values
    # a runtime constant backed by a submission-time value takes the value the user gave, as SPL
    given = {
        index: spl_literal(value, next((v.kind for v in values if v.index == index), "named"))
        for index, value in topo.given_values.items()
    }
    return render_aadl(topo, list(pes), ports, job_name=job_name, job_id=job_id, given=given)
