"""Sans-IO native core (Rust, PyO3)."""

__all__ = [
    "PropertiesError",
    "__version__",
    "parse_properties",
    "place_vreplicas",
]

__version__: str

class PropertiesError(ValueError):
    """Malformed Java-properties text; args: (message, [(line, reason), ...])."""

def parse_properties(text: str, *, strict: bool = True) -> dict[str, str]:
    """Parse Java-properties text into a dict in file order.

    Strict mode (the default) also rejects keys without a separator and repeated keys.
    Raises PropertiesError listing every problem with its line number.
    """

# -- scheduler (streams_k8s.scheduler) --

def place_vreplicas(
    ordinals: list[int],
    free: list[int],
    node: list[int],
    zone: list[int],
    num_nodes: int,
    num_zones: int,
    want: int,
    filters: list[tuple[str, int]],
    priorities: list[tuple[str, int]],
) -> tuple[list[tuple[int, int]], int]:
    """Place up to `want` vreplicas of a vpod holding none yet over the schedulable pods.

    Pods are given as parallel lists (ascending ordinals, node and zone index) and `free`
    holds the free slots by ordinal;
    `filters` are (name, MaxSkew or NumPartitions), `priorities` (name, weight), built-in
    plugins only. Returns ([(ordinal, vreplicas)], vreplicas left unplaced).
    """
