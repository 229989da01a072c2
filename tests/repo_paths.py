"""Where the repository and the shared test data are, for tests that read files."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TESTDATA = REPO.parent / "shared" / "testdata" / "open-streams"


def shared_testdata(*parts: str) -> Path:
    """A file or folder of ../shared/testdata/open-streams; the test skips when it is absent."""
    path = SHARED_TESTDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"Open Streams test data not found at {path}")
    return path


def real_adl(name: str) -> bytes:
    """The ADL of a real application: a bare .adl, or the one inside a .sab."""
    from streams_k8s.app.bundle import read_bundle

    path = shared_testdata("apps", name)
    return read_bundle(path).adl if name.endswith(".sab") else path.read_bytes()
