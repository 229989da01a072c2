"""Parsing untrusted XML (bundleInfo.xml, pub/sub bodies) without the classic XML attacks; the ADL is
parsed by the native core under the same rules (`rust/adl`, `MAX_XML_BYTES` passed to it).

The parser never resolves entities, never loads or validates against a DTD, never touches the
network, and keeps lxml's tree-size guard on. A document that declares a DOCTYPE is refused
outright: neither the ADL nor bundleInfo.xml has one, and refusing it closes the door on
XXE and entity-expansion ("billion laughs") payloads before any parsing happens.
"""

from __future__ import annotations

from lxml import etree

# Generous for real ADLs (a 100,000-operator application is ~150 MiB), small enough to bound memory.
MAX_XML_BYTES = 256 * 1024 * 1024
# A DOCTYPE can only appear in the prolog; scanning its first bytes refuses it before libxml2 runs.
_PROLOG_SCAN = 64 * 1024


class UnsafeXmlError(ValueError):
    """The document is malformed, too large, or uses a feature refused for untrusted input."""


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def parse_untrusted(data: bytes, *, what: str, max_bytes: int = MAX_XML_BYTES) -> etree._Element:
    """Parse ``data`` as untrusted XML and return its root element.

    ``what`` names the document in error messages (for example ``"ADL apps.parallel.Parallel.adl"``).
    """
    if len(data) > max_bytes:
        raise UnsafeXmlError(f"{what}: {len(data)} bytes exceeds the {max_bytes}-byte limit")
    if b"<!DOCTYPE" in data[:_PROLOG_SCAN] or b"<!ENTITY" in data[:_PROLOG_SCAN]:
        raise UnsafeXmlError(f"{what}: a DOCTYPE declaration is not allowed (entity and DTD attacks)")
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as err:
        raise UnsafeXmlError(f"{what}: not well-formed XML: {err}") from None
    doc = root.getroottree().docinfo
    if doc.internalDTD is not None or doc.externalDTD is not None:
        raise UnsafeXmlError(f"{what}: a DOCTYPE declaration is not allowed (entity and DTD attacks)")
    return root
