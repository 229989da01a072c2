"""`/api/subscriptions`: the PE runtime's view of import/export (routes of the instance REST API).

Base ``/api/subscriptions/job/{job}/pe/{pe}``:

- ``GET``: the PE's board document (`subscriptions`); 404 for an unknown job or PE.
- ``GET /export/{port}``, ``GET /import/{port}``: the Export / Import spec (JSON).
- Export properties (the export must be by properties, else 404), XML bodies of the SAM schemas:
  ``PUT /export/{port}/properties`` adds (``<streamProperties><property name type><value>…``;
  409 if one exists), ``PATCH`` sets (adds or replaces), ``POST`` returns the named ones
  (body ``<streamPropertyNames scope="all|listed"><name>…``; answer ``<streamProperties>``),
  ``DELETE`` removes the named ones (404 if one is missing).
- ``PUT|PATCH|GET|DELETE /export/{port}/property/{name}``: one property (body and answer
  ``<streamProperty name type><value>…``, a single ``<property>`` is accepted too).
- ``GET|PUT /import/{port}/filter``: the filter expression, ``text/plain`` (empty: none): at most
  8 KiB of printable text (tabs allowed), string literals closed and brackets balanced.
- ``GET|PUT /import/{port}/streams``: ``<importedStreams filter><nameBasedImport …/>…
  <propertyBasedImport subscription importOperName index applicationScope/></importedStreams>``;
  a subscription that does not parse is a 400.

Every value is checked before anything is written (a 400 naming the field): property names are
SPL identifiers, types one of ``rstring``, ``int64``, ``float64`` or a list of them (a scalar has
exactly one value, numbers parse as their type), names and values printable text; a filter or
subscription that does not hold is refused, so a stored one can always be read back.
Writes answer 204 and patch the Export or Import (conditional on its resourceVersion, retried on a
conflict); the broker then recomputes the board and notifies the PEs. Specs are read from the API
server, not a cache, so a PE reads what it just wrote; the board is the broker's latest. XML is
read by local element names, so documents with or without the SAM namespaces are accepted;
malformed ones are a 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aiohttp import web
from lxml import etree

from streams_k8s.api.import_export import ExportType, StreamProperty
from streams_k8s.app.safe_xml import UnsafeXmlError, parse_untrusted
from streams_k8s.app.subscription_expression import (
    SubscriptionError,
    parse_subscription,
    property_values,
)
from streams_k8s.controller.kinds import EXPORTS, IMPORTS
from streams_k8s.controller.rest_api import InstanceRestApi, RestError, json_response
from streams_k8s.controller.submission import pe_port_name
from streams_k8s.controller.subscription_broker import SubscriptionBroker
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.objects import Object, meta

BASE = "/api/subscriptions/job/{job}/pe/{pe}"
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


def _property(el: etree._Element) -> dict[str, Any]:
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


def _properties(data: bytes) -> list[dict[str, Any]]:
    root = _xml(data, "streamProperties")
    if _local(root) != "streamProperties":
        raise RestError(400, "BadRequest", f"expected <streamProperties>, not <{_local(root)}>")
    return [_property(p) for p in root if _local(p) == "property"]


def _names(data: bytes) -> list[str] | None:
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


def _properties_xml(properties: list[dict[str, Any]]) -> bytes:
    top = _root("streamProperties")
    for prop in properties:
        _values(etree.SubElement(top, f"{{{ADL_NS}}}property", name=prop["name"], type=prop["type"]), prop)
    return _document(top)


def _single_property_xml(prop: dict[str, Any]) -> bytes:
    return _document(_values(_root("streamProperty", {"name": prop["name"], "type": prop["type"]}), prop))


def _imported_streams(data: bytes) -> dict[str, Any]:
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


def _imported_streams_xml(streams: dict[str, Any]) -> bytes:
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


class SubscriptionApi:
    def __init__(
        self,
        rest: InstanceRestApi,
        client: KubeClient,
        broker: SubscriptionBroker,
    ) -> None:
        self.rest, self.client, self.broker = rest, client, broker

    def add_routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get(BASE, self.board)
        r.add_get(f"{BASE}/export/{{port}}", self.get_export)
        r.add_get(f"{BASE}/import/{{port}}", self.get_import)
        props = f"{BASE}/export/{{port}}/properties"
        r.add_put(props, self.add_properties)
        r.add_patch(props, self.set_properties)
        r.add_post(props, self.query_properties)
        r.add_delete(props, self.remove_properties)
        prop = f"{BASE}/export/{{port}}/property/{{name}}"
        r.add_put(prop, self.add_property)
        r.add_patch(prop, self.set_property)
        r.add_get(prop, self.get_property)
        r.add_delete(prop, self.remove_property)
        r.add_get(f"{BASE}/import/{{port}}/filter", self.get_filter)
        r.add_put(f"{BASE}/import/{{port}}/filter", self.put_filter)
        r.add_get(f"{BASE}/import/{{port}}/streams", self.get_streams)
        r.add_put(f"{BASE}/import/{{port}}/streams", self.put_streams)

    # --- lookups --------------------------------------------------------------------------

    async def _port_object(self, request: web.Request, resource: Resource) -> Object:
        """The Export or Import of the port, read from the API server: a PE reads its own writes."""
        job, _ = self.rest.lookup_pe(request.match_info["job"], request.match_info["pe"])
        port = request.match_info["port"]
        if not port.isdigit() or len(port) > 9:
            raise RestError(400, "BadRequest", f"'{port}' is not a port id")
        namespace, name = str(meta(job)["namespace"]), str(meta(job)["name"])
        try:
            return await self.client.get(
                resource, pe_port_name(name, int(request.match_info["pe"]), int(port)), namespace
            )
        except ApiError as err:
            if not err.not_found:
                raise
        what = "exports nothing" if resource == EXPORTS else "imports nothing"
        raise RestError(404, "NotFound", f"port {port} of PE {request.match_info['pe']} {what}")

    async def _by_properties(self, request: web.Request) -> Object:
        export = await self._port_object(request, EXPORTS)
        if (export.get("spec") or {}).get("type") != ExportType.BY_PROPERTIES.value:
            raise RestError(
                404, "NotFound", f"Export {meta(export)['name']} is by name: it has no properties"
            )
        return export

    async def _edit(self, resource: Resource, obj: Object, edit: Callable[[Spec], Spec]) -> None:
        """Merge-patch ``edit(spec)`` (a partial spec), retried on a concurrent change."""
        await self.rest.patch_retried(resource, obj, lambda o: {"spec": edit(o["spec"])})

    # --- board and specs ------------------------------------------------------------------

    async def board(self, request: web.Request) -> web.Response:
        job, _ = self.rest.lookup_pe(request.match_info["job"], request.match_info["pe"])
        board = self.broker.board(str(meta(job)["namespace"]))
        return json_response(board.document(str(meta(job)["name"]), int(request.match_info["pe"])))

    async def get_export(self, request: web.Request) -> web.Response:
        return json_response((await self._port_object(request, EXPORTS))["spec"])

    async def get_import(self, request: web.Request) -> web.Response:
        return json_response((await self._port_object(request, IMPORTS))["spec"])

    # --- export properties ----------------------------------------------------------------

    async def _change_properties(
        self, request: web.Request, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
    ) -> web.Response:
        export = await self._by_properties(request)
        change(list(export["spec"]["stream"].get("properties") or []))  # 4xx before any write

        def edit(spec: Spec) -> Spec:
            return {"stream": {"properties": change(list(spec["stream"].get("properties") or []))}}

        await self._edit(EXPORTS, export, edit)
        return web.Response(status=204)

    async def add_properties(self, request: web.Request) -> web.Response:
        added = _properties(await request.read())
        return await self._change_properties(request, lambda current: _added(current, added))

    async def set_properties(self, request: web.Request) -> web.Response:
        wanted = _properties(await request.read())
        return await self._change_properties(request, lambda current: _set(current, wanted))

    async def query_properties(self, request: web.Request) -> web.Response:
        export = await self._by_properties(request)
        names = _names(await request.read())
        current = list(export["spec"]["stream"].get("properties") or [])
        chosen = current if names is None else [p for p in current if p["name"] in names]
        return web.Response(body=_properties_xml(chosen), content_type=XML)

    async def remove_properties(self, request: web.Request) -> web.Response:
        names = _names(await request.read())
        return await self._change_properties(request, lambda current: _removed(current, names))

    async def add_property(self, request: web.Request) -> web.Response:
        prop = self._named_property(request, await request.read())
        return await self._change_properties(request, lambda current: _added(current, [prop]))

    async def set_property(self, request: web.Request) -> web.Response:
        prop = self._named_property(request, await request.read())
        return await self._change_properties(request, lambda current: _set(current, [prop]))

    async def get_property(self, request: web.Request) -> web.Response:
        export = await self._by_properties(request)
        name = request.match_info["name"]
        for prop in export["spec"]["stream"].get("properties") or ():
            if prop["name"] == name:
                return web.Response(body=_single_property_xml(prop), content_type=XML)
        raise RestError(404, "NotFound", f"Export {meta(export)['name']} has no property '{name}'")

    async def remove_property(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return await self._change_properties(request, lambda current: _removed(current, [name]))

    @staticmethod
    def _named_property(request: web.Request, data: bytes) -> dict[str, Any]:
        root = _xml(data, "streamProperty")
        if _local(root) == "streamProperties":
            inner = [p for p in root if _local(p) == "property"]
            if len(inner) != 1:
                raise RestError(400, "BadRequest", "expected exactly one property")
            root = inner[0]
        elif _local(root) not in ("streamProperty", "property"):
            raise RestError(400, "BadRequest", f"expected <streamProperty>, not <{_local(root)}>")
        prop = _property(root)
        if prop["name"] != request.match_info["name"]:
            raise RestError(
                400, "BadRequest", f"the body names '{prop['name']}', the path '{request.match_info['name']}'"
            )
        return prop

    # --- imports --------------------------------------------------------------------------

    async def get_filter(self, request: web.Request) -> web.Response:
        imported = await self._port_object(request, IMPORTS)
        return web.Response(text=imported["spec"]["streams"].get("filter") or "")

    async def put_filter(self, request: web.Request) -> web.Response:
        imported = await self._port_object(request, IMPORTS)
        try:
            text = checked_filter((await request.read()).decode("utf-8").strip())
        except UnicodeDecodeError:
            raise RestError(400, "BadRequest", "filter: must be UTF-8 text") from None
        await self._edit(IMPORTS, imported, lambda spec: {"streams": {"filter": text or None}})
        return web.Response(status=204)

    async def get_streams(self, request: web.Request) -> web.Response:
        imported = await self._port_object(request, IMPORTS)
        return web.Response(body=_imported_streams_xml(imported["spec"]["streams"]), content_type=XML)

    async def put_streams(self, request: web.Request) -> web.Response:
        imported = await self._port_object(request, IMPORTS)
        wanted = _imported_streams(await request.read())

        def edit(spec: Spec) -> Spec:
            # merge patch: a name-based import the document lacks is deleted with null
            names = wanted["nameBasedImports"]
            gone = dict.fromkeys(k for k in spec["streams"].get("nameBasedImports") or {} if k not in names)
            return {"streams": {**wanted, "nameBasedImports": {**gone, **names}}}

        await self._edit(IMPORTS, imported, edit)
        return web.Response(status=204)


def _added(current: list[dict[str, Any]], added: list[dict[str, Any]]) -> list[dict[str, Any]]:
    have = {p["name"] for p in current}
    if clash := sorted(have & {p["name"] for p in added}):
        raise RestError(409, "AlreadyExists", f"properties already exported: {', '.join(clash)}")
    return [*current, *added]


def _set(current: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name = {p["name"]: p for p in wanted}
    kept = [by_name.pop(p["name"], p) for p in current]
    return [*kept, *by_name.values()]


def _removed(current: list[dict[str, Any]], names: list[str] | None) -> list[dict[str, Any]]:
    if names is None:
        return []
    if missing := sorted(set(names) - {p["name"] for p in current}):
        raise RestError(404, "NotFound", f"no such properties: {', '.join(missing)}")
    return [p for p in current if p["name"] not in names]
