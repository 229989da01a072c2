"""Where the repository and the shared test data are, for tests that read files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_TESTDATA = REPO.parent / "shared" / "testdata" / "open-streams"
