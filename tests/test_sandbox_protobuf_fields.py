"""The sandbox's protobuf wire facts are what tools/protobuf-fields derives from the Kubernetes Go
types, and its decoder reads every kind as Go writes it: each kind's object, empty and with every
field set, marshalled by Go to protobuf decodes to exactly the JSON encoding/json makes of it.
Needs Go (and the Go module proxy or cache); skipped without."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams_k8s.sandbox.admission import protobuf

GO = shutil.which("go")
TOOL = Path(__file__).resolve().parent.parent / "tools" / "protobuf-fields"
TABLE = Path(protobuf.__file__).with_name("protobuf_fields.json")

pytestmark = pytest.mark.skipif(GO is None, reason="Go is not installed (the table is regenerated with it)")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[dict[str, Any]]]:
    """The table and the samples as the tool writes them now (its first build takes a minute or two)."""
    assert GO is not None
    out = tmp_path_factory.mktemp("protobuf-fields")
    subprocess.run(
        [GO, "run", ".", "-o", str(out / "table.json"), "-samples", str(out / "samples.jsonl")],
        cwd=TOOL,
        check=True,
        timeout=900,
    )
    samples = [orjson.loads(line) for line in (out / "samples.jsonl").read_bytes().splitlines()]
    return (out / "table.json").read_bytes(), samples


def test_the_committed_table_is_the_one_the_tool_writes(
    generated: tuple[bytes, list[dict[str, Any]]],
) -> None:
    table, _ = generated
    assert table == TABLE.read_bytes(), (
        "protobuf_fields.json is stale: run `go generate` in tools/protobuf-fields and commit it"
    )


def test_every_kind_decodes_to_the_json_go_marshals(generated: tuple[bytes, list[dict[str, Any]]]) -> None:
    _, samples = generated
    assert len(samples) > 600  # every built-in kind, empty and filled
    differ = []
    for sample in samples:
        envelope = protobuf.read_envelope(base64.b64decode(sample["protobuf"]))
        assert (envelope.api_version, envelope.kind) == (sample["apiVersion"], sample["kind"])
        message = protobuf.message_of(envelope.api_version, envelope.kind)
        assert message is not None
        if protobuf.decode_object(envelope, message) != sample["json"]:
            differ.append(f"{sample['apiVersion']} {sample['kind']}")
    assert differ == []
