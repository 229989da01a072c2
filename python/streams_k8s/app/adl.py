"""ADL (v4200, and v4000 where it has the same shape) → logical model.

The native core parses and reads the XML (``rust/adl``) under :mod:`streams_k8s.app.safe_xml`'s
rules (no DTD, no entities, bounded size); every structural problem becomes an :class:`AdlError`
that names the element's line, or the document when it is refused as a whole.
"""

from __future__ import annotations

from streams_k8s import _native
from streams_k8s.app.collector import collector_paused
from streams_k8s.app.model import Application, OperatorKind, SplitterKind
from streams_k8s.app.safe_xml import MAX_XML_BYTES


class AdlError(ValueError):
    """The ADL is not a usable application description."""


def parse_adl(data: bytes, *, what: str = "ADL") -> Application:
    """Parse ADL bytes (untrusted) into an :class:`Application`. Raises AdlError."""
    try:
        with collector_paused():
            return _native.parse_adl(
                data,
                what=what,
                max_bytes=MAX_XML_BYTES,
                operator_kind=OperatorKind,
                splitter_kind=SplitterKind,
            )
    except _native.AdlParseError as err:
        raise AdlError(str(err)) from None
