"""Errors from the Kubernetes API, carrying the Status body the server sent."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any


class ApiError(Exception):
    """A non-2xx answer (``status`` 0 means no answer: connection refused, reset, timeout)."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: a stale resourceVersion, or AlreadyExists on create (see ``already_exists``)."""
        return self.status == 409

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def retryable(self) -> bool:
        """Worth retrying later: throttled, server trouble, or no answer at all."""
        return self.status in (0, 429) or self.status >= 500

    @classmethod
    def from_status(cls, status: int, body: dict[str, Any], retry_after: float | None = None) -> ApiError:
        return cls(
            status,
            str(body.get("reason") or ""),
            str(body.get("message") or ""),
            body,
            retry_after,
        )


async def unless_gone(call: Awaitable[Any]) -> bool:
    """Await ``call``, a write to one object; False, not an error, when the object was gone (404)
    or replaced by another (409 on its uid or resourceVersion precondition)."""
    try:
        await call
    except ApiError as err:
        if not (err.not_found or err.conflict):
            raise
        return False
    return True
