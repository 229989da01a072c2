"""The CRDs: checked in exactly as the models generate them, valid manifests with structural
schemas, and refusing the same bad input the models refuse (schema and CEL rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner
from openapi_schema_validator import OAS30Validator

from api_documents import INVALID_JOB_SPECS, USER_DOCUMENTS, invalid_job
from repo_paths import REPO
from streams_k8s.api import KINDS, Job, Resource
from streams_k8s.api.crd import crd_files, crd_manifest
from streams_k8s.cli import main

CRD_DIR = REPO / "crds"


def _schema(kind: type[Resource]) -> dict[str, Any]:  # type: ignore[type-arg]
    schema: dict[str, Any] = crd_manifest(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _cel_violations(schema: dict[str, Any], value: Any, env: celpy.Environment) -> list[str]:
    """Evaluate every x-kubernetes-validations rule where the API server would: at each present node."""
    found = []
    for rule in schema.get("x-kubernetes-validations", []):
        program = env.program(env.compile(rule["rule"]))
        if not program.evaluate({"self": celpy.json_to_cel(value)}):
            found.append(rule["message"])
    if isinstance(value, dict):
        for key, item in value.items():
            child = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if isinstance(child, dict):
                found += _cel_violations(child, item, env)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            found += _cel_violations(schema["items"], item, env)
    return found


def _unknown_fields(schema: dict[str, Any], value: Any, where: str = "") -> list[str]:
    """What kubectl's default strict field validation refuses (the server would otherwise prune)."""
    found = []
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f'unknown field "{where}{key}"')
            elif key != "metadata":
                found += _unknown_fields(schema["properties"][key], item, f"{where}{key}.")
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            found += _unknown_fields(schema["additionalProperties"], item, f"{where}{key}.")
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            found += _unknown_fields(schema["items"], item, where)
    return found


def crd_rejections(kind: type[Resource], document: dict[str, Any]) -> list[str]:  # type: ignore[type-arg]
    schema = _schema(kind)
    errors = [e.message for e in OAS30Validator(schema).iter_errors(document)]
    return errors + _unknown_fields(schema, document) + _cel_violations(schema, document, celpy.Environment())


def test_checked_in_crds_match_the_models() -> None:
    generated = crd_files()
    on_disk = {p.name: p.read_text() for p in CRD_DIR.glob("*.yaml")}
    assert sorted(on_disk) == sorted(generated), (
        "crds/ has missing or extra files: run `streams-k8s crds -o crds`"
    )
    for name, text in generated.items():
        assert on_disk[name] == text, f"crds/{name} is stale: run `streams-k8s crds -o crds`"


def test_cli_writes_the_same_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["crds", "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    for path in CRD_DIR.glob("*.yaml"):
        assert (tmp_path / "out" / path.name).read_text() == path.read_text()


def test_cli_prints_one_stream_of_all_crds() -> None:
    result = CliRunner().invoke(main, ["crds"])
    assert result.exit_code == 0
    documents = list(yaml.safe_load_all(result.output))
    assert [d["spec"]["names"]["kind"] for d in documents] == [k.kind_name for k in KINDS]


def test_cli_reports_an_unwritable_directory_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["crds", "--output", str(blocker / "sub")])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert "cannot write CRDs" in result.output


@pytest.mark.parametrize("path", sorted(CRD_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_manifest_is_a_valid_crd(path: Path) -> None:
    manifest = yaml.safe_load(path.read_text())
    kubernetes_validate.validate(manifest, "1.30", strict=True)


def _check_structural(node: dict[str, Any], where: str) -> None:
    """The API server's structural-schema rules that matter for generated schemas."""
    assert "$ref" not in node, where
    assert "title" not in node, where
    if not node.get("x-kubernetes-int-or-string") and not node.get("x-kubernetes-preserve-unknown-fields"):
        assert "type" in node, f"{where} has no type"
    assert not ("properties" in node and "additionalProperties" in node), where
    if "default" in node:
        assert not list(OAS30Validator(node).iter_errors(node["default"])), (
            f"{where}: default does not validate"
        )
    for key, child in node.get("properties", {}).items():
        _check_structural(child, f"{where}.{key}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _check_structural(node[key], f"{where}.{key}")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind_name)
def test_schemas_are_structural(kind: type[Resource]) -> None:  # type: ignore[type-arg]
    _check_structural(_schema(kind), kind.kind_name)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind_name)
def test_names_columns_and_subresources(kind: type[Resource]) -> None:  # type: ignore[type-arg]
    manifest = crd_manifest(kind)
    assert manifest["metadata"]["name"] == f"{kind.plural}.streams.ibm.com"
    version = manifest["spec"]["versions"][0]
    assert "status" in version["subresources"]
    assert ("scale" in version["subresources"]) == (kind.kind_name == "ParallelRegion")


def test_seed_names_and_printer_columns() -> None:
    names = {m["spec"]["names"]["kind"]: m["spec"]["names"] for m in map(crd_manifest, KINDS)}
    assert {k: (n["plural"], n["shortNames"]) for k, n in names.items()} == {
        "Job": ("streamsjobs", ["stj"]),
        "ProcessingElement": ("streamspes", ["stp"]),
        "HostPool": ("streamshostpools", ["sthp"]),
        "ParallelRegion": ("streamsprs", ["stpr"]),
        "ConsistentRegion": ("streamscrs", ["stcr"]),
        "ConsistentRegionOperator": ("streamscros", ["stcro"]),
        "Import": ("streamsimports", ["sti"]),
        "Export": ("streamsexports", ["stx"]),
        "JobAutoscaler": ("streamsjobautoscalers", ["stas"]),
    }
    columns = {
        kind.kind_name: [
            (c["name"], c["jsonPath"])
            for c in crd_manifest(kind)["spec"]["versions"][0].get("additionalPrinterColumns", [])
        ]
        for kind in KINDS
    }
    assert columns["Job"][:2] == [("Status", ".status.phase"), ("PEs", ".status.processingElements")]
    assert ("Age", ".metadata.creationTimestamp") in columns["Job"]
    assert columns["ProcessingElement"][:2] == [
        ("Connectivity", ".status.connectivity"),
        ("Launch", ".status.launchCount"),
    ]
    assert columns["ParallelRegion"][:2] == [("Alias", ".spec.alias"), ("Width", ".spec.width")]


def test_parallel_region_scales_its_width() -> None:
    from streams_k8s.api import ParallelRegion

    scale = crd_manifest(ParallelRegion)["spec"]["versions"][0]["subresources"]["scale"]
    assert scale["specReplicasPath"] == ".spec.width"
    assert scale["statusReplicasPath"] == ".status.width"


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "jobs").glob("*.yaml")), ids=lambda p: p.name)
def test_job_examples_validate_against_the_crd(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        assert crd_rejections(Job, document) == []


@pytest.mark.parametrize("kind", list(USER_DOCUMENTS), ids=lambda k: k.kind_name)
def test_user_documents_validate_against_their_crd(kind: type[Resource]) -> None:  # type: ignore[type-arg]
    assert crd_rejections(kind, yaml.safe_load(USER_DOCUMENTS[kind])) == []


@pytest.mark.parametrize(
    ("case", "fragment", "words"), INVALID_JOB_SPECS, ids=[c[0] for c in INVALID_JOB_SPECS]
)
def test_crd_refuses_what_the_model_refuses(case: str, fragment: dict[str, Any], words: list[str]) -> None:
    assert crd_rejections(Job, invalid_job(fragment)), f"{case}: the CRD accepts what the model refuses"


def test_fusion_conflict_is_a_cel_rule_with_a_clear_message() -> None:
    rejections = crd_rejections(Job, invalid_job({"fusion": {"automatic": True, "manual": 3}}))
    assert rejections == ["fusion: automatic, legacy and manual are mutually exclusive; choose one"]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind_name)
def test_columns_end_with_a_declared_age_and_name_real_fields(kind: type[Resource]) -> None:  # type: ignore[type-arg]
    """kube-apiserver adds no Age to a CRD that declares columns: every kind declares it, last; and
    every column's path is a field of the schema (a typo would print an empty column)."""
    version = crd_manifest(kind)["spec"]["versions"][0]
    columns = version["additionalPrinterColumns"]
    assert columns[-1] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    assert [c["name"] for c in columns].count("Age") == 1
    for column in columns[:-1]:
        if column["jsonPath"] in (".metadata.generation",):  # ObjectMeta: the API server's, not the schema's
            assert column["type"] == "integer"
            continue
        node = version["schema"]["openAPIV3Schema"]
        for part in column["jsonPath"].lstrip(".").split("."):
            assert part in node.get("properties", {}), (column, part)
            node = node["properties"][part]
        assert column["type"] == node["type"] or "x-kubernetes-int-or-string" in node, column
