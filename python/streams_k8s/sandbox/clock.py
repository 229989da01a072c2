"""The API server's clock: timestamps as Kubernetes writes them (RFC 3339, whole seconds, UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> str:
    return stamp(datetime.now(UTC))
