"""Sans-IO native core (Rust, PyO3)."""

__all__ = [
    # fusion (application pipeline)
    "FusionError",
    "PropertiesError",
    "__version__",
    "automatic_pe_count",
    "fuse",
    "parse_properties",
]

__version__: str

class PropertiesError(ValueError):
    """Malformed Java-properties text; args: (message, [(line, reason), ...])."""

def parse_properties(text: str, *, strict: bool = True) -> dict[str, str]:
    """Parse Java-properties text into a dict in file order.

    Strict mode (the default) also rejects keys without a separator and repeated keys.
    Raises PropertiesError listing every problem with its line number.
    """

# --- fusion (application pipeline) ---

class FusionError(ValueError):
    """Operators that must share a PE cannot; args: (constraint, (node, node))."""

_NodeTuple = tuple[
    list[int],
    list[int],
    bool,
    list[int],
    list[int],
    bool,
    int,
    int | None,
    bool,
    bool,
    int | None,
    int | None,
]

def fuse(
    nodes: list[_NodeTuple],
    edges: list[tuple[int, int]],
    *,
    manual: int | None = None,
    channel_policy: str = "noChannelInfluence",
    previous: list[int | None] | None = None,
) -> tuple[list[list[int]], list[tuple[str, int, int, str | None, tuple[int, int] | None]]]:
    """Partition interned topology nodes into PEs; ``manual=None`` is legacy (one PE per unit).

    ``previous`` (re-fusion): the earlier PE of each node, None for new nodes; units that stay
    whole keep their PE and only the others are placed.

    Node tuple: (colocations, exlocations, isolated, host_colocations, host_exlocations,
    host_isolated, host_key, consistent_region, restartable, relocatable, jvm, channel).
    Returns (PEs as sorted node positions, notices ``(kind, asked, got, constraint, nodes)``).
    """

def automatic_pe_count(
    operators: int,
    min_threads: int,
    max_threads: int,
    cpu_request_millis: int,
    cpu_limit_millis: int | None = None,
    nodes: int | None = None,
) -> int:
    """The automatic PE count: clamp(ceil(min_threads/limit), 1, ceil(max_threads/request)), ≤ nodes."""
