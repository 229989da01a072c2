"""The outermost middleware of every HTTP server of the project: every error answer is JSON.

An unknown path or method (aiohttp's plain-text 404/405), a body over the size limit (413) and
anything a handler did not expect become ``{"status", "reason", "message"}`` answers; an
unexpected exception is logged with its traceback and answered 500, never a plain-text page or a
dropped connection.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler

log = logging.getLogger(__name__)


def json_error(status: int, reason: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"status": status, "reason": reason, "message": message}
    return web.Response(
        status=status, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def _reason(err: web.HTTPException) -> str:
    return "".join(word.capitalize() for word in err.reason.split()) or "Error"


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status < 400:
            raise  # a redirect or an empty success: not an error
        headers: dict[str, Any] = {k: v for k, v in err.headers.items() if k in ("Allow", "WWW-Authenticate")}
        return json_error(err.status, _reason(err), err.text or err.reason, headers or None)
    except Exception as exc:
        log.exception("%s %s failed", request.method, request.path)
        return json_error(500, "InternalError", f"internal error: {type(exc).__name__}: {str(exc)[:200]}")
