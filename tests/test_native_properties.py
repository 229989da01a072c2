"""The native Java-properties parser as Python sees it (the name-table format)."""

from __future__ import annotations

import pytest

from streams_k8s import _native
from streams_k8s._native import PropertiesError, parse_properties

NAME_TABLE = """\
#Operator port labels
#Tue Mar 02 10:15:00 UTC 2021
0.Beacon.0=0.0@0
0.Result.Region1.Op[0].0=1.0@0
0.Sink.0 = 2.1@0
"""


def test_name_table_parses_in_file_order() -> None:
    table = parse_properties(NAME_TABLE)
    assert list(table.items()) == [
        ("0.Beacon.0", "0.0@0"),
        ("0.Result.Region1.Op[0].0", "1.0@0"),
        ("0.Sink.0", "2.1@0"),
    ]


def test_escapes_unicode_and_continuations() -> None:
    text = "k\\:1 = caf\\u00e9 \\\n      au lait\r\nsp\\ ace=\\tx\n"
    assert parse_properties(text) == {"k:1": "café au lait", "sp ace": "\tx"}


def test_every_problem_is_reported_with_its_line() -> None:
    text = "a=1\n# fine\nb=\\uZZZZ\nnovalue\na=2\n"
    with pytest.raises(PropertiesError) as info:
        parse_properties(text)
    assert [line for line, _ in info.value.problems] == [3, 4, 5]
    assert info.value.problems[2] == (5, "duplicate key 'a' (first on line 1)")
    assert "line 5: duplicate key 'a' (first on line 1)" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_lenient_mode_reads_like_java() -> None:
    assert parse_properties("a=1\nflag\na=2\n", strict=False) == {"a": "2", "flag": ""}


def test_empty_and_comment_only_input() -> None:
    assert parse_properties("") == {}
    assert parse_properties("# only\n! comments\n\n") == {}


def test_native_version_is_exposed() -> None:
    assert _native.__version__.count(".") == 2
