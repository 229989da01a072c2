"""The consistent-region REST API the PE runtime calls (mounted at ``/api/consistentregion``).

Bodies are exactly what the runtime sends: a bare sequence id for checkpoint reports, and
objects whose numbers are strings (boost's ``write_json`` quotes everything) for the others.
Progress PUTs are queued and answered 204 at once, as the runtime expects; whether the FSM
accepts the event is decided in order, later. Malformed input is a 400 and an unknown region or
PE a 404, both with a JSON body ``{"status", "reason", "message"}``; anything unexpected is a JSON
500 (``streams_k8s.k8s.http_errors``), never a plain-text page.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import orjson
from aiohttp import web
from aiohttp.typedefs import Middleware

from streams_k8s.api.contract import COORDINATOR_API_PORT, coordinator_service_name
from streams_k8s.api.spec_values import Trigger
from streams_k8s.consistent.fsm import (
    BlockingCheckpointDone,
    CheckpointDone,
    Drain,
    Event,
    RegionMachine,
    Reset,
    ResetDone,
)
from streams_k8s.consistent.notifications import NotificationBoard, encode_board, encode_entry
from streams_k8s.consistent.openapi import document
from streams_k8s.k8s.http_errors import json_errors

BASE_PATH = "/api/consistentregion"
# Where PEs reach a job's coordinator (the headless Service of the job), {job} and {namespace} to fill.
SERVER_URL = f"http://{coordinator_service_name('{job}')}.{{namespace}}:{COORDINATOR_API_PORT}{BASE_PATH}"
_MAX_ID = 2**64 - 1
_DIGITS = re.compile(r"\s*[0-9]+\s*")
_PATH_ID = re.compile(r"[0-9]+")


class RegionHost(Protocol):
    """What the API needs from a coordinator."""

    board: NotificationBoard

    @property
    def regions(self) -> Mapping[int, RegionMachine]: ...

    def submit(self, region_index: int, event: Event) -> None: ...


# Which coordinator serves a request (shared mode: by the job the request is for).
HostResolver = Callable[[web.Request], RegionHost]


class BadRequest(ValueError):
    """The request is malformed; the message says how."""


def _error(status: int, message: str) -> web.Response:
    reason = {400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}.get(status, "Error")
    body = {"status": status, "reason": reason, "message": message}
    return web.json_response(body, status=status, dumps=lambda o: orjson.dumps(o).decode())


def _json(value: Any) -> web.Response:
    return web.Response(body=orjson.dumps(value), content_type="application/json")


def _id(value: Any, what: str) -> int:
    """A non-negative integer given as a JSON number or a string of digits (as the PE sends)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
    else:
        raise BadRequest(f"{what} must be a non-negative integer, got {orjson.dumps(value).decode()}")
    if not 0 <= number <= _MAX_ID:
        raise BadRequest(f"{what} must be between 0 and {_MAX_ID}, got {number}")
    return number


def _path_id(request: web.Request, key: str, what: str) -> int:
    text = request.match_info[key]
    if not _PATH_ID.fullmatch(text):
        raise BadRequest(f"{what} in the path must be a non-negative integer, got '{text}'")
    return _id(text, what)


def _flag(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise BadRequest(f"{what} must be true or false, got {orjson.dumps(value).decode()}")


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        raise BadRequest("the request has no body")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadRequest(f"the body is not JSON: {raw[:80]!r}") from None


def _member(body: Any, outer: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """``body[outer]``, an object that must hold ``keys``."""
    inner = body.get(outer) if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        raise BadRequest(f'the body must be {{"{outer}": {{...}}}}')
    missing = [k for k in keys if k not in inner]
    if missing:
        raise BadRequest(f"{outer} lacks {', '.join(missing)}")
    return inner


class _Api:
    def __init__(self, resolve: HostResolver) -> None:
        self.host = resolve

    def region(self, request: web.Request) -> tuple[int, RegionMachine]:
        index = _path_id(request, "region", "region id")
        machine = self.host(request).regions.get(index)
        if machine is None:
            raise web.HTTPNotFound(text=f"no consistent region {index}")
        return index, machine

    def region_pe(self, request: web.Request) -> tuple[int, int]:
        index, machine = self.region(request)
        pe = _path_id(request, "pe", "PE id")
        if pe not in machine.pes:
            raise web.HTTPNotFound(text=f"PE {pe} is not in consistent region {index}")
        return index, pe

    # ---- notification board ----

    async def pe_board(self, request: web.Request) -> web.Response:
        pe = _path_id(request, "pe", "PE id")
        entries = self.host(request).board.for_pe(pe)
        if not entries:
            raise web.HTTPNotFound(text=f"no notifications for PE {pe}")
        return web.Response(body=encode_board(entries), content_type="application/json")

    async def pe_region_entry(self, request: web.Request) -> web.Response:
        pe = _path_id(request, "pe", "PE id")
        index = _path_id(request, "region", "region id")
        note = self.host(request).board.entry(pe, index)
        if note is None:
            raise web.HTTPNotFound(text=f"no notification for PE {pe} in region {index}")
        return web.Response(body=encode_entry(note), content_type="application/json")

    # ---- region settings and state ----

    async def region_field(self, request: web.Request) -> web.Response:
        _, machine = self.region(request)
        spec = machine.spec
        field = request.match_info["field"]
        values: dict[str, Callable[[], Any]] = {
            "state": lambda: machine.state.value,
            "lastcompletedseqid": lambda: machine.snapshot()["lastCompletedSeqID"],
            # The original's spelling, which its clients know.
            "trigger": lambda: "periodic" if spec.trigger is Trigger.PERIODIC else "operator driven",
            "period": lambda: float(spec.period or 0.0),
            "draintimeout": lambda: float(spec.drain_timeout),
            "resettimeout": lambda: float(spec.reset_timeout),
            "maxconsecutiveresetattempts": lambda: spec.max_consecutive_reset_attempts,
        }
        getter = values.get(field)
        if getter is None:
            raise web.HTTPNotFound(text=f"no region field '{field}' (one of {', '.join(values)})")
        return _json(getter())

    # ---- progress from PEs and requests from operators ----

    def _queued(self, request: web.Request, index: int, event: Event) -> web.Response:
        self.host(request).submit(index, event)
        return web.Response(status=204)

    async def checkpoint(self, request: web.Request) -> web.Response:
        index, pe = self.region_pe(request)
        seq = _id(await _body(request), "the sequence id")
        return self._queued(request, index, CheckpointDone(pe, seq))

    async def blocking_checkpoint(self, request: web.Request) -> web.Response:
        index, pe = self.region_pe(request)
        seq = _id(await _body(request), "the sequence id")
        return self._queued(request, index, BlockingCheckpointDone(pe, seq))

    async def pe_reset(self, request: web.Request) -> web.Response:
        index, pe = self.region_pe(request)
        progress = _member(await _body(request), "progress", ("seqId", "resetAttempt"))
        seq = _id(progress["seqId"], "progress.seqId")
        attempt = _id(progress["resetAttempt"], "progress.resetAttempt")
        return self._queued(request, index, ResetDone(pe, seq, attempt))

    async def drain(self, request: web.Request) -> web.Response:
        index, _ = self.region(request)
        req = _member(await _body(request), "request", ("seqId", "operator"))
        operator = req["operator"]
        if not isinstance(operator, str) or not operator:
            raise BadRequest("request.operator must be an operator name")
        return self._queued(request, index, Drain(operator, _id(req["seqId"], "request.seqId")))

    async def reset(self, request: web.Request) -> web.Response:
        index, _ = self.region(request)
        req = _member(await _body(request), "request", ())
        force = _flag(req.get("force", "false"), "request.force")
        return self._queued(request, index, Reset(force))


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadRequest as err:
        return _error(400, str(err))
    except web.HTTPException as err:
        if err.status < 400:
            raise
        return _error(err.status, err.text or err.reason)


def consistent_region_api(
    host: RegionHost | None = None,
    *,
    resolve: HostResolver | None = None,
    middlewares: Sequence[Middleware] = (),
    prefix: str = "",
) -> web.Application:
    """The API as a sub-application: ``app.add_subapp(BASE_PATH, consistent_region_api(host))``.

    One coordinator serves every request (``host``), or ``resolve`` picks it per request
    (raising ``web.HTTPNotFound`` for a job not served here). ``middlewares`` run after the
    JSON error mapping (authentication); ``prefix`` goes before every route (it may hold
    variables the resolver reads)."""
    if resolve is None:
        if host is None:
            raise TypeError("give one of host and resolve")
        only: RegionHost = host

        def resolve(request: web.Request) -> RegionHost:
            return only

    elif host is not None:
        raise TypeError("give only one of host and resolve")
    api = _Api(resolve)
    app = web.Application(middlewares=[json_errors, _json_errors, *middlewares])
    openapi = orjson.dumps(document(SERVER_URL))

    async def openapi_json(request: web.Request) -> web.Response:
        return web.Response(body=openapi, content_type="application/json")

    app.router.add_get(prefix + "/openapi.json", openapi_json)
    app.router.add_get(prefix + "/pe/{pe}", api.pe_board)
    app.router.add_get(prefix + "/pe/{pe}/region/{region}", api.pe_region_entry)
    app.router.add_get(prefix + "/region/{region}/{field}", api.region_field)
    app.router.add_put(prefix + "/region/{region}/pe/{pe}/checkpoint", api.checkpoint)
    app.router.add_put(prefix + "/region/{region}/pe/{pe}/blockingcheckpoint", api.blocking_checkpoint)
    app.router.add_put(prefix + "/region/{region}/pe/{pe}/reset", api.pe_reset)
    app.router.add_put(prefix + "/region/{region}/drain", api.drain)
    app.router.add_put(prefix + "/region/{region}/reset", api.reset)
    return app
