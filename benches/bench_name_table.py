"""Name-table parse of a 100,000-entry file: the native parser against pure-Python parsers.

Target (issue 6): native ≤ 10 ms and ≥ 5x faster than the best pure-Python parser.
Run: pytest benches/bench_name_table.py --benchmark-enable --benchmark-group-by=group
"""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO

import javaproperties
import jproperties
import pytest

from streams_k8s._native import parse_properties
from streams_k8s.naming import NameTable, OperatorPortLabel, PePortLabel

ENTRIES = 100_000


def _table_text() -> str:
    # A job of 20,000 operators with 5 input ports each, fused into 1,000 PEs.
    table = NameTable(
        {
            OperatorPortLabel(7, i // 5, i % 5): PePortLabel(i % 1000, (i // 1000) % 100, 7)
            for i in range(ENTRIES)
        }
    )
    return table.to_text()


TEXT = _table_text()


def _jproperties(text: str) -> dict[str, str]:
    props = jproperties.Properties()
    props.load(text, "utf-8")
    return {key: value.data for key, value in props.items()}


PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "native": parse_properties,
    "javaproperties": javaproperties.loads,
    "jproperties": _jproperties,
}


@pytest.mark.parametrize("parser", list(PARSERS))
def test_parse_100k_entries(benchmark: pytest.FixtureRequest, parser: str) -> None:
    benchmark.group = "name-table parse, 100,000 entries"  # type: ignore[attr-defined]
    result = benchmark(PARSERS[parser], TEXT)  # type: ignore[operator]
    assert len(result) == ENTRIES
    assert result["7.0.0"] == "0.0@7"


def test_parsers_agree() -> None:
    sample = TEXT[: len(TEXT) // 50].rsplit("\n", 1)[0] + "\n"
    results = [parse(sample) for parse in PARSERS.values()]
    assert all(r == results[0] for r in results)
    assert StringIO(sample).readline() == "#Operator port labels\n"
