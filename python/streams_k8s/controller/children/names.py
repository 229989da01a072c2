"""Names of a job's children (beyond the contract's: a PE's `<job>-<peId>`, the coordinator's).

Deterministic, so creating a child again is harmless (409 AlreadyExists is success).
"""

from __future__ import annotations


def host_pool_name(job: str, pool_index: int) -> str:
    return f"{job}-{pool_index}"


def parallel_region_name(job: str, region_index: int) -> str:
    return f"{job}-{region_index}"


def consistent_region_name(job: str, region_index: int) -> str:
    """A ConsistentRegion, and its label value ``streams.ibm.com/cr``."""
    return f"{job}-cr{region_index}"


def pe_port_name(job: str, pe: int, port: int) -> str:
    """The name of the Export or Import of a PE port (PE output and input port ids may coincide:
    the kinds tell them apart)."""
    return f"{job}-{pe}-{port}"
