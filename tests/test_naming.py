"""Name resolution: labels, the per-job name table, and the resolver's cache and REST lookups."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import javaproperties
import pytest
from aiohttp import web
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from streams_k8s.cli import main
from streams_k8s.naming import (
    LabelError,
    NameTable,
    NameTableError,
    OperatorPortLabel,
    PePortLabel,
)
from streams_k8s.naming.resolver import NameNotFound, Resolver, fixed_job_name, rest_job_name_lookup
from streams_k8s.naming.table import undated

# The spec's example: job 7, three PEs.
SPEC_TABLE = """\
#Operator port labels
#Tue Mar 02 10:15:00 UTC 2021
7.4.0=2.0@7
7.2.0=1.0@7
7.3.0=1.1@7
7.1.0=3.0@7
"""


def test_labels_parse_and_print() -> None:
    assert OperatorPortLabel.parse("7.2.0") == OperatorPortLabel(7, 2, 0)
    assert str(OperatorPortLabel(7, 2, 0)) == "7.2.0"
    label = PePortLabel.parse("1.1@7")
    assert (label.pe_id, label.port_id, label.job_id, label.tcp_port) == (1, 1, 7, 10001)
    assert str(label) == "1.1@7"


@pytest.mark.parametrize("text", ["7.2", "7.2.0.1", "a.b.c", "7.-2.0", " 7.2.0", "1.0@7"])
def test_bad_operator_labels(text: str) -> None:
    with pytest.raises(LabelError, match="operator port label"):
        OperatorPortLabel.parse(text)


@pytest.mark.parametrize("text", ["1.0", "1@7", "1.0@", "1.0@7@7", "x.0@7", "7.2.0"])
def test_bad_pe_labels(text: str) -> None:
    with pytest.raises(LabelError, match="PE port label"):
        PePortLabel.parse(text)


def test_spec_example_table_reads_as_specified() -> None:
    table = NameTable.parse(SPEC_TABLE)
    assert table[OperatorPortLabel(7, 2, 0)] == PePortLabel(1, 0, 7)
    assert table[OperatorPortLabel(7, 3, 0)].tcp_port == 10001
    assert len(table) == 4


def test_unusual_syntax_reads_the_same() -> None:
    odd = "# c\r\n  7.4.0 : 2.0@7\r\n7.2.0=\\\n   1.0@7\n7.3.0 1.1@7\n7.1.0=3.0@7"
    assert NameTable.parse(odd) == NameTable.parse(SPEC_TABLE)


def test_writer_matches_java_properties_store_and_parses_back() -> None:
    table = NameTable.parse(SPEC_TABLE)
    text = table.to_text(datetime(2021, 3, 2, 10, 15, tzinfo=UTC))
    assert text.splitlines()[:3] == ["#Operator port labels", "#Tue Mar 02 10:15:00 UTC 2021", "7.1.0=3.0@7"]
    assert NameTable.parse(text) == table


def test_a_table_written_again_with_the_same_entries_is_the_same_undated() -> None:
    table = NameTable.parse(SPEC_TABLE)
    first, again = (table.to_text(datetime(2021, 3, day, tzinfo=UTC)) for day in (2, 3))
    assert first != again
    assert undated(first) == undated(again) == "#Operator port labels\n" + first.split("\n", 2)[2]
    # only a comment under the header comment is the date: an entry there is kept
    assert undated("#h\n7.4.0=2.0@7\n") == "#h\n7.4.0=2.0@7\n"
    assert undated("7.4.0=2.0@7\n#d\n") == "7.4.0=2.0@7\n#d\n"


def test_bad_tables_name_the_line_or_entry() -> None:
    with pytest.raises(NameTableError, match="line 4: duplicate key '7.4.0'"):
        NameTable.parse("#h\n#d\n7.4.0=2.0@7\n7.4.0=2.1@7\n")
    with pytest.raises(NameTableError, match="line 2: 'two' is not a PE port label"):
        NameTable.parse("#h\n7.4.0=two\n")
    with pytest.raises(
        NameTableError,
        match=r"line 3: 'x\.1\.0' is not an operator port label \(J\.O\.P\); line 4: duplicate key '7\.1\.0'",
    ):
        NameTable.parse("7.1.0=1.0@7\n7.2.0=2.0@7\nx.1.0=1.0@7\n7.1.0=3.0@7\n")


def _table_file(tmp_path: Path, text: str = SPEC_TABLE) -> Path:
    path = tmp_path / "operator_port_labels.properties"
    path.write_text(text)
    return path


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_operator_label_resolves_to_the_pe_service(tmp_path: Path) -> None:
    resolver = Resolver(
        table_path=_table_file(tmp_path), namespace="streams", job_name=fixed_job_name("apps")
    )
    result = await resolver.resolve("7.3.0")
    assert result.operator_port == OperatorPortLabel(7, 3, 0)
    assert (result.endpoint.host, result.endpoint.port) == ("apps-1.streams", 10001)
    assert str(result.endpoint) == "apps-1.streams:10001"


async def test_table_cache_lasts_ten_seconds_and_misses_reread(tmp_path: Path) -> None:
    path = _table_file(tmp_path)
    clock = FakeClock()
    resolver = Resolver(table_path=path, namespace="ns", job_name=fixed_job_name("j"), clock=clock)
    assert resolver.pe_port_of(OperatorPortLabel(7, 2, 0)) == PePortLabel(1, 0, 7)
    # Re-fusion moved the operator: within 10 s a hit still answers from the cache...
    path.write_text(SPEC_TABLE.replace("7.2.0=1.0@7", "7.2.0=5.0@7") + "7.9.0=6.0@7\n")
    clock.now += 9.9
    assert resolver.pe_port_of(OperatorPortLabel(7, 2, 0)) == PePortLabel(1, 0, 7)
    # ...a miss re-reads at once (no negative caching), and force skips the cache.
    assert resolver.pe_port_of(OperatorPortLabel(7, 9, 0)) == PePortLabel(6, 0, 7)
    path.write_text(SPEC_TABLE.replace("7.2.0=1.0@7", "7.2.0=8.0@7"))
    assert resolver.pe_port_of(OperatorPortLabel(7, 2, 0), force=True) == PePortLabel(8, 0, 7)
    path.write_text(SPEC_TABLE)
    clock.now += 10.0
    assert resolver.pe_port_of(OperatorPortLabel(7, 2, 0)) == PePortLabel(1, 0, 7)


async def test_missing_or_broken_table_is_not_found(tmp_path: Path) -> None:
    resolver = Resolver(table_path=tmp_path / "absent", namespace="ns", job_name=fixed_job_name("j"))
    with pytest.raises(NameNotFound, match="cannot resolve 7.2.0"):
        await resolver.resolve("7.2.0")
    broken = Resolver(
        table_path=_table_file(tmp_path, "7.2.0=x\n"), namespace="ns", job_name=fixed_job_name("j")
    )
    with pytest.raises(NameNotFound, match="not a PE port label"):
        await broken.resolve("7.2.0")
    with pytest.raises(NameNotFound, match="not an operator port label"):
        await broken.resolve("garbage")


CALLS = web.AppKey("calls", list[str])


@pytest.fixture
async def instance_api() -> AsyncIterator[web.AppRunner]:
    """A stand-in for the instance operator's job-name endpoint, counting its calls."""
    calls: list[str] = []

    async def name(request: web.Request) -> web.Response:
        calls.append(request.match_info["id"])
        if request.match_info["id"] == "7":
            return web.Response(text="apps-parallel")
        return web.json_response({"error": "unknown job"}, status=404)

    app = web.Application()
    app[CALLS] = calls
    app.router.add_get("/api/state/job/by-id/{id}/name", name)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield runner
    await runner.cleanup()


def _url(runner: web.AppRunner) -> str:
    host, port = runner.addresses[0][:2]
    return f"http://{host}:{port}"


async def test_pe_label_asks_the_rest_api_and_caches_the_endpoint(
    instance_api: web.AppRunner, tmp_path: Path
) -> None:
    clock = FakeClock()
    async with aiohttp.ClientSession() as session:
        resolver = Resolver(
            table_path=_table_file(tmp_path),
            namespace="streams",
            job_name=rest_job_name_lookup(_url(instance_api), session),
            clock=clock,
        )
        first = await resolver.resolve("2.0@7")
        assert (first.endpoint.host, first.endpoint.port) == ("apps-parallel-2.streams", 10000)
        await resolver.resolve("2.0@7")
        assert instance_api.app[CALLS] == ["7"]
        clock.now += 10
        await resolver.resolve("2.0@7")
        assert instance_api.app[CALLS] == ["7", "7"]
        with pytest.raises(NameNotFound, match="answered 404"):
            await resolver.resolve("2.0@8")


async def test_unresolvable_service_name_is_not_found(tmp_path: Path) -> None:
    resolver = Resolver(
        table_path=_table_file(tmp_path),
        namespace="invalid",
        job_name=fixed_job_name("nohost"),
        resolve_addresses=True,
    )
    with pytest.raises(NameNotFound, match="cannot resolve nohost-0.invalid"):
        await resolver.endpoint_of(PePortLabel(0, 0, 1))


def test_cli_resolves_and_reports_errors_in_one_line(tmp_path: Path) -> None:
    table = _table_file(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(
        main, ["resolve", "--table", str(table), "--job-name", "apps", "-n", "streams", "7.3.0"]
    )
    assert ok.exit_code == 0
    assert ok.output.strip() == "operator port 7.3.0 -> PE port 1.1@7 -> apps-1.streams:10001"
    as_json = runner.invoke(
        main, ["resolve", "--table", str(table), "--job-name", "apps", "-o", "json", "7.3.0"]
    )
    assert '"port":10001' in as_json.output
    missing = runner.invoke(main, ["resolve", "--table", str(table), "--job-name", "apps", "7.9.9"])
    assert missing.exit_code == 1
    assert missing.output.strip().count("\n") == 0
    assert "cannot resolve 7.9.9" in missing.output
    usage = runner.invoke(main, ["resolve", "--table", str(table), "7.3.0"])
    assert usage.exit_code == 2


label_numbers = st.integers(min_value=0, max_value=10**12)
tables = st.dictionaries(
    st.builds(OperatorPortLabel, label_numbers, label_numbers, label_numbers),
    st.builds(PePortLabel, label_numbers, label_numbers, label_numbers),
    max_size=40,
)


@given(tables, st.sampled_from(["\n", "\r\n"]), st.sampled_from(["=", " = ", ":", "\t:  "]), st.booleans())
def test_any_table_reads_back_like_java_would(
    entries: dict[OperatorPortLabel, PePortLabel], newline: str, separator: str, comments: bool
) -> None:
    lines = [f"{key}{separator}{value}" for key, value in entries.items()]
    if comments:
        lines = [
            line for pair in zip(lines, ["# note", "", "! other"] * len(lines), strict=False) for line in pair
        ]
    text = newline.join(lines)
    table = NameTable.parse(text)
    assert dict(table) == entries
    # An independent Java-properties reader agrees.
    oracle = {OperatorPortLabel.parse(k): PePortLabel.parse(v) for k, v in javaproperties.loads(text).items()}
    assert oracle == entries
