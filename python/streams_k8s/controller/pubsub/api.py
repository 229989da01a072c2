"""`/api/subscriptions`: the PE runtime's view of import/export (routes of the instance REST API).

Base ``/api/subscriptions/job/{job}/pe/{pe}``:

- ``GET``: the PE's board document (`pubsub.board`); 404 for an unknown job or PE.
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

Every value is checked before anything is written (`pubsub.bodies`: a 400 naming the field), so a
stored one can always be read back. Writes answer 204 and patch the Export or Import (conditional
on its resourceVersion, retried on a conflict); the broker then recomputes the board and notifies
the PEs. Specs are read from the API server, not a cache, so a PE reads what it just wrote; the
board is the broker's latest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from streams_k8s.api.spec_values import ExportType
from streams_k8s.controller.children.names import pe_port_name
from streams_k8s.controller.kinds import EXPORTS, IMPORTS
from streams_k8s.controller.pubsub.bodies import (
    XML,
    Spec,
    checked_filter,
    imported_streams_of,
    imported_streams_xml,
    named_property,
    names_of,
    properties_of,
    properties_xml,
    property_xml,
)
from streams_k8s.controller.pubsub.broker import SubscriptionBroker
from streams_k8s.controller.rest.api import InstanceRestApi, RestError, json_response
from streams_k8s.k8s.client import KubeClient, Resource
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.objects import Object, meta

BASE = "/api/subscriptions/job/{job}/pe/{pe}"


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
        added = properties_of(await request.read())
        return await self._change_properties(request, lambda current: _added(current, added))

    async def set_properties(self, request: web.Request) -> web.Response:
        wanted = properties_of(await request.read())
        return await self._change_properties(request, lambda current: _set(current, wanted))

    async def query_properties(self, request: web.Request) -> web.Response:
        export = await self._by_properties(request)
        names = names_of(await request.read())
        current = list(export["spec"]["stream"].get("properties") or [])
        chosen = current if names is None else [p for p in current if p["name"] in names]
        return web.Response(body=properties_xml(chosen), content_type=XML)

    async def remove_properties(self, request: web.Request) -> web.Response:
        names = names_of(await request.read())
        return await self._change_properties(request, lambda current: _removed(current, names))

    async def add_property(self, request: web.Request) -> web.Response:
        prop = named_property(request.match_info["name"], await request.read())
        return await self._change_properties(request, lambda current: _added(current, [prop]))

    async def set_property(self, request: web.Request) -> web.Response:
        prop = named_property(request.match_info["name"], await request.read())
        return await self._change_properties(request, lambda current: _set(current, [prop]))

    async def get_property(self, request: web.Request) -> web.Response:
        export = await self._by_properties(request)
        name = request.match_info["name"]
        for prop in export["spec"]["stream"].get("properties") or ():
            if prop["name"] == name:
                return web.Response(body=property_xml(prop), content_type=XML)
        raise RestError(404, "NotFound", f"Export {meta(export)['name']} has no property '{name}'")

    async def remove_property(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return await self._change_properties(request, lambda current: _removed(current, [name]))

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
        return web.Response(body=imported_streams_xml(imported["spec"]["streams"]), content_type=XML)

    async def put_streams(self, request: web.Request) -> web.Response:
        imported = await self._port_object(request, IMPORTS)
        wanted = imported_streams_of(await request.read())

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
