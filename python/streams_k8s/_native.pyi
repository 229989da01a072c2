"""Sans-IO native core (Rust, PyO3)."""

__all__ = [
    "PropertiesError",
    "__version__",
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
