"""Kubernetes `Status` errors: what the API server answers when a request cannot be served."""

from __future__ import annotations

from typing import Any

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error the API server reports as a `kind: Status` body with an HTTP code."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        name: str | None = None,
        group: str | None = None,
        kind: str | None = None,
        causes: list[dict[str, str]] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # An empty reason is kept: kube-apiserver sends none for errors it did not classify.
        self.reason = reason if reason is not None else _REASONS.get(code, "Unknown")
        self.name = name
        self.group = group
        self.kind = kind
        self.causes = causes
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        """The `Status` body of this error."""
        # StatusDetails' fields are all omitempty; an error that carries details at all sends the
        # object even when every field is empty (`details: {}`), as kube-apiserver's do.
        fields = {
            "name": self.name,
            "group": self.group,
            "kind": self.kind,
            "causes": self.causes,
            "retryAfterSeconds": self.retry_after,
        }
        details = {key: value for key, value in fields.items() if value}
        has_details = any(value is not None for value in fields.values())
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:
            del body["reason"]
        if has_details:
            body["details"] = details
        return body


class PageNotFound(ApiError):
    """A path no API is installed at: kube-apiserver answers Go's plain-text `404 page not found`,
    not a Status."""

    def __init__(self) -> None:
        super().__init__(404, "404 page not found")


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404, f'{_qualified(resource, group)} "{name}" not found', name=name, group=group, kind=resource
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        f'{_qualified(resource, group)} "{name}" already exists',
        reason="AlreadyExists",
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, name: str, group: str = "", why: str = "") -> ApiError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        name=name,
        group=group,
        kind=resource,
    )


def invalid(kind: str, name: str, causes: list[dict[str, str]], group: str = "") -> ApiError:
    """422 Invalid with one cause per offending field, worded like the API server (several causes
    are listed in brackets)."""
    summary = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    return ApiError(
        422,
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
        name=name,
        group=group,
        kind=kind,
        causes=causes,
    )


def cause(field: str, message: str, reason: str = "FieldValueInvalid") -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def not_served() -> ApiError:
    """A path in a built-in group-version with nothing there (an unknown resource or version, a
    resource addressed in the wrong scope, a subresource it lacks): kube-apiserver's NotFound with
    empty details."""
    return ApiError(404, "the server could not find the requested resource", name="", group="", kind="")


def method_not_allowed() -> ApiError:
    return ApiError(
        405,
        "the server does not allow this method on the requested resource",
        reason="MethodNotAllowed",
        name="",
        group="",
        kind="",
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource
