"""The bodies of `/api/subscriptions` (`pubsub.api`): the SAM XML documents of stream properties
and imported streams and the filter text, read with every value checked (a `RestError` 400
naming the field) and written back.

Property names are SPL identifiers, types one of ``rstring``, ``int64``, ``float64`` or a list of
them (a scalar has exactly one value, numbers parse as their type), names and values printable
text; a filter (at most 8 KiB of printable text, tabs allowed, string literals closed and brackets
balanced) or a subscription that does not hold is refused. XML is read by local element names, so
documents with or without the SAM namespaces are accepted; malformed ones are a 400.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from streams_k8s.api.import_export import StreamProperty
from streams_k8s.app.safe_xml import UnsafeXmlError, parse_untrusted
from streams_k8s.app.subscription_expression import SubscriptionError, parse_subscription, property_values
from streams_k8s.controller.rest.api import RestError

ADL_NS = "http://www.ibm.com/xmlns/prod/streams/application"
XML = "application/xml"

Spec = dict[str, Any]


def _local(el: etree._Element) -> str:
    return etree.QName(el).localname


def _xml(data: bytes, what: str) -> etree._Element:
    try:
        return parse_untrusted(data, what=what, max_bytes=64 * 1024)
    except UnsafeXmlError as err:
        raise RestError(400, "BadRequest", str(err)) from None


MAX_FILTER = 8 * 1024
MAX_TEXT = 1024
_SPL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The types a stream property may have (the SPL Export operator's).
SCALAR_TYPES = ("rstring", "int64", "float64")
PROPERTY_TYPES = (*SCALAR_TYPES, *(f"list<{t}>" for t in SCALAR_TYPES))
_CLOSING = {")": "(", "]": "["}
_IMPORT_ATTRIBUTES = (
    ("importOperName", MAX_TEXT),
    ("applicationName", MAX_TEXT),
    ("streamName", MAX_TEXT),
    ("applicationScope", MAX_TEXT),
    ("subscription", MAX_FILTER),
)


def _bad(field: str, problem: str) -> RestError:
    return RestError(400, "BadRequest", f"{field}: {problem}")


def _text(value: str, field: str, limit: int = MAX_TEXT, *, lines: bool = False) -> str:
    """Printable text (tabs, and newlines where ``lines``) of at most ``limit`` characters."""
    if len(value) > limit:
        raise _bad(field, f"at most {limit} characters, got {len(value)}")
    allowed = "\t\n\r" if lines else "\t"
    if bad := next((c for c in value if not c.isprintable() and c not in allowed), None):
        raise _bad(field, f"control character {bad!r} is not allowed")
    return value


def checked_filter(text: str, field: str = "filter") -> str:
    """An import filter (an SPL expression the exporting PE evaluates), checked as far as its
    shape: printable text, string literals closed, brackets balanced."""
    _text(text, field, MAX_FILTER)
    opened: list[str] = []
    quote: str | None = None
    escaped = False
    for at, char in enumerate(text, 1):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "([":
            opened.append(char)
        elif char in _CLOSING and (not opened or opened.pop() != _CLOSING[char]):
            raise _bad(field, f"unbalanced {char!r} at position {at}")
    if quote is not None:
        raise _bad(field, "a string literal is not closed")
    if opened:
        raise _bad(field, f"{len(opened)} bracket(s) not closed")
    return text


def property_of(el: etree._Element) -> dict[str, Any]:
    name, type_ = (el.get("name") or "").strip(), (el.get("type") or "").replace(" ", "")
    values = [v.text or "" for v in el if _local(v) == "value"]
    if not name or not type_ or not values:
        raise RestError(400, "BadRequest", "a property needs name and type attributes and at least one value")
    field = f"property {name[:64]!r}"
    if not _SPL_NAME.match(name) or len(name) > MAX_TEXT:
        raise _bad(f"{field} name", "must be an SPL identifier (letters, digits, '_'; not a digit first)")
    if type_ not in PROPERTY_TYPES:
        raise _bad(f"{field} type", f"must be one of {', '.join(PROPERTY_TYPES)}, not {type_[:64]!r}")
    if type_ in SCALAR_TYPES and len(values) != 1:
        raise _bad(f"{field} values", f"a {type_} has exactly one value, got {len(values)}")
    for value in values:
        _text(value, f"{field} value", lines=True)
    prop = {"name": name, "type": type_, "values": values}
    element = type_[5:-1] if type_.startswith("list<") else type_
    if element != "rstring":
        parsed = property_values([StreamProperty.model_validate(prop)])[name]
        if any(isinstance(v, str) for v in (parsed if isinstance(parsed, tuple) else (parsed,))):
            raise _bad(f"{field} values", f"every value must be an {element}")
    return prop


def properties_of(data: bytes) -> list[dict[str, Any]]:
    root = _xml(data, "streamProperties")
    if _local(root) != "streamProperties":
        raise RestError(400, "BadRequest", f"expected <streamProperties>, not <{_local(root)}>")
    return [property_of(p) for p in root if _local(p) == "property"]


def names_of(data: bytes) -> list[str] | None:
    """The listed property names, or None for scope="all"."""
    root = _xml(data, "streamPropertyNames")
    if _local(root) != "streamPropertyNames":
        raise RestError(400, "BadRequest", f"expected <streamPropertyNames>, not <{_local(root)}>")
    if root.get("scope") == "all":
        return None
    names = []
    for el in root:
        if _local(el) == "name":  # a streamPropertyNameType holds its own <name>; accept plain text too
            inner = [c for c in el if _local(c) == "name"]
            names.append(((inner[0].text if inner else el.text) or "").strip())
    return names


def _root(tag: str, attrs: dict[str, str] | None = None) -> etree._Element:
    return etree.Element(f"{{{ADL_NS}}}{tag}", attrs or {}, nsmap={None: ADL_NS})  # type: ignore[dict-item]


def _document(root: etree._Element) -> bytes:
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))


def _values(el: etree._Element, prop: dict[str, Any]) -> etree._Element:
    for value in prop["values"]:
        etree.SubElement(el, f"{{{ADL_NS}}}value").text = value
    return el


def properties_xml(properties: list[dict[str, Any]]) -> bytes:
    top = _root("streamProperties")
    for prop in properties:
        _values(etree.SubElement(top, f"{{{ADL_NS}}}property", name=prop["name"], type=prop["type"]), prop)
    return _document(top)


def property_xml(prop: dict[str, Any]) -> bytes:
    return _document(_values(_root("streamProperty", {"name": prop["name"], "type": prop["type"]}), prop))


def imported_streams_of(data: bytes) -> dict[str, Any]:
    """The spec's ``streams`` from an ``importedStreams`` document (subscription checked)."""
    root = _xml(data, "importedStreams")
    if _local(root) != "importedStreams":
        raise RestError(400, "BadRequest", f"expected <importedStreams>, not <{_local(root)}>")
    by_name: dict[str, Any] = {}
    by_property: dict[str, Any] | None = None
    for el in root:
        kind = _local(el)
        index = el.get("index") or ""
        if kind not in ("nameBasedImport", "propertyBasedImport"):
            continue
        if not index.isdigit() or not el.get("importOperName"):
            raise RestError(400, "BadRequest", f"<{kind}> needs importOperName and a numeric index")
        scope = el.get("applicationScope")
        for attribute, limit in _IMPORT_ATTRIBUTES:
            if (value := el.get(attribute)) is not None:
                _text(value, f"<{kind} {attribute}>", limit)
        if kind == "nameBasedImport":
            if not el.get("applicationName") or not el.get("streamName"):
                raise RestError(400, "BadRequest", "<nameBasedImport> needs applicationName and streamName")
            by_name[index] = {
                "applicationName": el.get("applicationName"),
                "importOperName": el.get("importOperName"),
                "streamName": el.get("streamName"),
                "applicationScope": scope,
            }
        else:
            subscription = el.get("subscription") or ""
            try:
                parse_subscription(subscription)
            except SubscriptionError as err:
                raise RestError(400, "BadRequest", f"subscription {subscription!r}: {err}") from None
            by_property = {
                "subscription": subscription,
                "importOperName": el.get("importOperName"),
                "index": int(index),
                "applicationScope": scope,
            }
    wanted_filter = root.get("filter")
    if wanted_filter is not None:
        checked_filter(wanted_filter, "<importedStreams filter>")
    return {"nameBasedImports": by_name, "propertyBasedImport": by_property, "filter": wanted_filter or None}


def imported_streams_xml(streams: dict[str, Any]) -> bytes:
    top = _root("importedStreams")
    if streams.get("filter"):
        top.set("filter", streams["filter"])
    for index, entry in sorted((streams.get("nameBasedImports") or {}).items()):
        attrs: dict[str, str] = {k: str(v) for k, v in entry.items() if v is not None}
        etree.SubElement(top, f"{{{ADL_NS}}}nameBasedImport", {**attrs, "index": index})
    if prop := streams.get("propertyBasedImport"):
        etree.SubElement(
            top, f"{{{ADL_NS}}}propertyBasedImport", {k: str(v) for k, v in prop.items() if v is not None}
        )
    return _document(top)


def named_property(name: str, data: bytes) -> dict[str, Any]:
    """The one property of a body (``<streamProperty>``, a ``<property>`` or ``<streamProperties>``
    holding one), which must be the property ``name`` (the path's)."""
    root = _xml(data, "streamProperty")
    if _local(root) == "streamProperties":
        inner = [p for p in root if _local(p) == "property"]
        if len(inner) != 1:
            raise RestError(400, "BadRequest", "expected exactly one property")
        root = inner[0]
    elif _local(root) not in ("streamProperty", "property"):
        raise RestError(400, "BadRequest", f"expected <streamProperty>, not <{_local(root)}>")
    prop = property_of(root)
    if prop["name"] != name:
        raise RestError(400, "BadRequest", f"the body names '{prop['name']}', the path '{name}'")
    return prop
