"""The subscription board of a busy namespace: every Export or Import change recomputes it."""

from __future__ import annotations

from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from streams_k8s.api.contract import APPLICATION_NAME_ANNOTATION, APPLICATION_SCOPE_ANNOTATION, JOB_LABEL
from streams_k8s.controller.pubsub.board import compute_board

JOBS = 100  # 100 exporting and 100 importing jobs, 5 ports each: 500 Exports, 500 Imports


def _obj(kind: str, job: str, port: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {
            "name": f"{job}-0-{port}",
            "namespace": "default",
            "labels": {JOB_LABEL: job},
            "annotations": {APPLICATION_NAME_ANNOTATION: "a::App", APPLICATION_SCOPE_ANNOTATION: "Default"},
        },
        "spec": {"jobId": 0, "peId": 0, "portId": port, **spec},
    }


def _namespace() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    exports, imports, jobs = [], [], []
    for j in range(JOBS):
        exp, imp = f"exp{j}", f"imp{j}"
        jobs += [exp, imp]
        for p in range(5):
            props = [
                {"name": "kind", "type": "rstring", "values": [f'"k{p}"']},
                {"name": "tags", "type": "list<rstring>", "values": [f'"t{j % 10}"', '"all"']},
                {"name": "rank", "type": "int64", "values": [str(j)]},
            ]
            stream = (
                {"exportOperName": "E", "properties": props}
                if p
                else {"exportOperName": "E", "name": f"s{j}"}
            )
            exports.append(
                _obj("Export", exp, p, {"type": "ByProperties" if p else "ByName", "stream": stream})
            )
            if p:
                wanted = f'kind == "k{p}" && "t{j % 10}" in tags && rank % 7 == {j % 7}'
                streams = {"propertyBasedImport": {"subscription": wanted, "importOperName": "I", "index": 1}}
            else:
                entry = {
                    "applicationName": "a::App",
                    "importOperName": "I",
                    "streamName": f"s{(j + 1) % JOBS}",
                }
                streams = {"nameBasedImports": {"1": entry}}
            imports.append(_obj("Import", imp, p, {"portIndex": p, "streams": streams}))
    return exports, imports, jobs


def test_board_of_500_exports_and_500_imports(benchmark: BenchmarkFixture) -> None:
    exports, imports, jobs = _namespace()
    board = benchmark(compute_board, exports, imports, jobs)
    assert board.invalid == {}
    assert len(board.documents) == 2 * JOBS
    entries = sum(len(e["entries"]) for d in board.documents.values() for e in d["imports"].values())
    assert entries > JOBS
