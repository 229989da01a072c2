"""Shared test fixtures and helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TESTDATA = REPO.parent / "shared" / "testdata" / "open-streams"


@pytest.fixture
def open_streams_testdata() -> Path:
    """The original implementation's bundles and schemas, beside the checkout (never copied in)."""
    if not SHARED_TESTDATA.is_dir():
        pytest.skip(f"Open Streams test data not found at {SHARED_TESTDATA}")
    return SHARED_TESTDATA
