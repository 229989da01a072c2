"""Warnings for the client of the request being served: `Warning: 299 - "..."` response headers,
as kube-apiserver sends them (Pod Security's warn mode, deprecations), which kubectl prints."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_CURRENT: ContextVar[list[str] | None] = ContextVar("sandbox_warnings", default=None)


def warn(text: str) -> None:
    """Add a warning to the current request's answer (nothing outside a request)."""
    current = _CURRENT.get()
    if current is not None and text not in current:
        current.append(text)


@contextlib.contextmanager
def collecting() -> Iterator[list[str]]:
    """Collect the warnings raised while serving one request."""
    collected: list[str] = []
    token = _CURRENT.set(collected)
    try:
        yield collected
    finally:
        _CURRENT.reset(token)


def header_values(warnings: list[str]) -> list[str]:
    return ['299 - "{}"'.format(w.replace("\\", "\\\\").replace('"', '\\"')) for w in warnings]
