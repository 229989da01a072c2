"""Name-table parse of a 100,000-entry file: the native parser against pure-Python parsers.

Target (issue 6): native ≤ 10 ms and ≥ 5x faster than the best pure-Python parser. Each contender
turns the file into a usable name table: ours (`NameTable.parse`, kept native), and each
pure-Python properties parser followed by the label parse into the same table.
Run: pytest benches/bench_name_table.py --benchmark-enable --benchmark-group-by=group
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def _labelled(
    parse: Callable[[str], dict[str, str]],
) -> Callable[[str], dict[OperatorPortLabel, PePortLabel]]:
    def table(text: str) -> dict[OperatorPortLabel, PePortLabel]:
        return {OperatorPortLabel.parse(k): PePortLabel.parse(v) for k, v in parse(text).items()}

    return table


TABLES: dict[str, Callable[[str], Mapping[OperatorPortLabel, PePortLabel]]] = {
    "native NameTable": NameTable.parse,
    "javaproperties + labels": _labelled(javaproperties.loads),
    "jproperties + labels": _labelled(_jproperties),
}


@pytest.mark.parametrize("parser", list(TABLES))
def test_name_table_100k_entries(benchmark: pytest.FixtureRequest, parser: str) -> None:
    benchmark.group = "name table (operator port -> PE port), 100,000 entries"  # type: ignore[attr-defined]
    table = benchmark(TABLES[parser], TEXT)  # type: ignore[operator]
    assert len(table) == ENTRIES
    assert table[OperatorPortLabel(7, 0, 0)] == PePortLabel(0, 0, 7)


@pytest.mark.parametrize("parser", list(PARSERS))
def test_properties_to_dict_100k_entries(benchmark: pytest.FixtureRequest, parser: str) -> None:
    benchmark.group = "Java properties to dict[str, str], 100,000 entries"  # type: ignore[attr-defined]
    result = benchmark(PARSERS[parser], TEXT)  # type: ignore[operator]
    assert len(result) == ENTRIES
    assert result["7.0.0"] == "0.0@7"


def test_parsers_agree() -> None:
    sample = TEXT[: len(TEXT) // 50].rsplit("\n", 1)[0] + "\n"
    results = [parse(sample) for parse in PARSERS.values()]
    assert all(r == results[0] for r in results)
    assert StringIO(sample).readline() == "#Operator port labels\n"
