"""Shared test fixtures and helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo_paths import SHARED_TESTDATA


@pytest.fixture
def open_streams_testdata() -> Path:
    """The original implementation's bundles and schemas, beside the checkout (never copied in)."""
    if not SHARED_TESTDATA.is_dir():
        pytest.skip(f"Open Streams test data not found at {SHARED_TESTDATA}")
    return SHARED_TESTDATA
