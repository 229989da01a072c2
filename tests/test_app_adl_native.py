"""The native ADL reader against the Python one it replaced (``adl_reference``): on the real
bundles, the generated applications and damaged or hand-made inputs it gives an equal model
(field by field, with the same names and types) or the same refusal."""

from __future__ import annotations

import dataclasses
import re
from enum import Enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adl_reference
from repo_paths import SHARED_TESTDATA, real_adl
from streams_k8s.app.adl import AdlError, parse_adl
from streams_k8s.app.model import HostPlacement, OperatorKind
from streams_k8s.app.synthetic import Exported, Imported, SyntheticSpec, synthetic_adl

NS = "http://www.ibm.com/xmlns/prod/streams/application/v4200"
# The parsers' own words for XML that is not well-formed differ; only the prefix is held equal.
NOT_WELL_FORMED = re.compile(r"^(.*: not well-formed XML: ).*$", re.DOTALL)


def assert_same(reference: Any, native: Any, where: str = "app") -> None:
    """``native`` has every field of the reference dataclass, equal and of the same type."""
    if dataclasses.is_dataclass(reference):
        assert type(native).__name__ == type(reference).__name__, where
        for f in dataclasses.fields(reference):
            assert_same(getattr(reference, f.name), getattr(native, f.name), f"{where}.{f.name}")
    elif isinstance(reference, Enum):
        assert native is reference, where
    elif isinstance(reference, tuple):
        assert type(native) is tuple, where
        assert len(native) == len(reference), where
        for i, (r, n) in enumerate(zip(reference, native, strict=True)):
            assert_same(r, n, f"{where}[{i}]")
    elif isinstance(reference, dict):
        assert type(native) is dict, where
        assert list(native) == list(reference), where
        for key, value in reference.items():
            assert_same(value, native[key], f"{where}[{key}]")
    else:
        assert type(native) is type(reference), (where, reference, native)
        assert native == reference, (where, reference, native)


def _outcome(parse: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "model", parse(data)
    except AdlError as err:
        return "refused", NOT_WELL_FORMED.sub(r"\1", str(err))
    except ValueError as err:  # the reference let Python's int()/float() errors out
        return "crashed", str(err)


def assert_agree(data: bytes) -> None:
    """Both readers accept ``data`` with equal models, or both refuse it with the same message.

    Where the reference crashed with a bare ValueError (a non-numeric annotation value or metric
    index), the native reader refuses it with an AdlError instead."""
    ref_kind, ref = _outcome(adl_reference.parse_adl, data)
    kind, native = _outcome(parse_adl, data)
    if ref_kind == "crashed" or (ref_kind == "refused" and NOT_WELL_FORMED.match(ref)):
        # libxml2 also refuses namespace URIs that are not URIs, which the namespace check names.
        assert kind == "refused", (ref, native)
    elif ref_kind == "model":
        assert kind == "model", native
        assert_same(ref, native)
    else:
        assert (kind, native) == (ref_kind, ref)


REAL = sorted(p.name for p in SHARED_TESTDATA.joinpath("apps").glob("*") if p.suffix in (".sab", ".adl"))


@pytest.mark.parametrize("name", REAL or ["apps.parallel.Parallel.sab"])
def test_real_bundles_give_the_same_model(name: str) -> None:
    assert_agree(real_adl(name))


SPECS = [
    SyntheticSpec(),
    SyntheticSpec(chains=3, length=4, regions=2, width=3, fan_in=False),
    SyntheticSpec(chains=4, length=5, pools=2, replicate_pools=True, regions=2),
    SyntheticSpec(chains=4, length=6, colocate_pairs=True, exlocate_chain_ends=True, isolate_heads=2),
    SyntheticSpec(chains=3, length=4, consistent_chains=2),
    SyntheticSpec(chains=3, length=3, regions=2, width_values=True, required_values=True),
    SyntheticSpec(
        chains=3,
        length=3,
        exports=(
            Exported(stream="out"),
            Exported(properties=(("kind", "rstring", ('"bargains"',)), ("n", "list<int32>", ("1", "2")))),
            Exported(stream="filtered", allow_filter=True),
        ),
        imports=(
            Imported(application="other::App", stream="in", scope="s"),
            Imported(subscription='kind == "bargains"', filter="n > 1"),
        ),
    ),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: repr(s)[14:60])
def test_generated_apps_give_the_same_model(spec: SyntheticSpec) -> None:
    assert_agree(synthetic_adl(spec))


def _app(body: str, *, app: str = "", composite: str = "") -> bytes:
    return (
        f"<applicationSet xmlns='{NS}'><splApplication name='x'>{app}<composites><compositeOperInstances>"
        f"<compositeOperInstance index='90' definitionIndex='0' name='M'>{composite}{body}"
        "</compositeOperInstance></compositeOperInstances></composites></splApplication></applicationSet>"
    ).encode()


OP = "<primitiveOperInstance index='1' name='A' definitionIndex='0'>{}</primitiveOperInstance>"

EDGES = {
    "numbers as Python reads them": _app(
        "<primitiveOperInstance index=' 1 ' name='A' definitionIndex='+0'/>"
        "<primitiveOperInstance index='1_2' name='B' definitionIndex='-0'/>"
    ),
    "a bad boolean": _app(OP.replace("name='A'", "name='A' restartable='yes'")),
    "a missing attribute": _app(OP.replace(" name='A'", "")),
    "a port index twice, unnamed operator": _app(
        "<primitiveOperInstance index='1' definitionIndex='0'><inputPorts>"
        "<port index='0' tupleTypeIndex='0'/><port index='0' tupleTypeIndex='0'/></inputPorts>"
        "</primitiveOperInstance>"
    ),
    "an operator index twice": _app(OP.format("") + OP.format("")),
    "a composite and an operator share an index": _app(OP.replace("index='1'", "index='90'")),
    "text split by comments and CDATA, and entities": _app(
        OP.format(
            "<sharedObject class='c&amp;d'><wrapper> no<!-- x -->ne </wrapper>"
            "<uri><![CDATA[a<b]]>&#x41;</uri>"
            "</sharedObject><jvmArguments><jvmArgument> -Xmx1g\n</jvmArgument></jvmArguments>"
        )
    ),
    "attribute whitespace": _app(OP.replace("name='A'", "name='A\tB\nC'")),
    "nested composites in order": _app(
        OP.format("")
        + "<compositeOperInstance index='91' definitionIndex='1' name='N'>"
        + OP.replace("'1'", "'2'").format("")
        + "<compositeOperInstance index='92' definitionIndex='7' name='O'>"
        + OP.replace("'1'", "'3'").format("")
        + "</compositeOperInstance></compositeOperInstance>"
        + OP.replace("'1'", "'4'").format(""),
        app="<composites><compositeOperDefinitions><compositeOperDefinition index='1' kind='k1'/>"
        "<compositeOperDefinition index='1' kind='k2'/></compositeOperDefinitions></composites>",
    ),
    "a foreign namespace is not followed": _app(
        OP.format("<x:resources xmlns:x='urn:x'><x:poolLocation poolIndex='3'/></x:resources>")
        + "<y:primitiveOperInstance xmlns:y='urn:y' index='5' name='Y' definitionIndex='0'/>"
    ),
    "placement, partitions, checkpointing, tracing": _app(
        OP.format(
            "<resources isolation='true'><hostLocation hostname='h'/>"
            "<poolLocation poolIndex='1' inpoolIndex='2'/>"
            "<coLocation colocId='c'/><exLocation exlocId='e'/></resources>"
            "<partitions isolation='1'><coLocation colocId='p'/></partitions>"
            "<checkpointing policy='periodic' period=' 2.5 '/><tracing level='debug'/>"
            "<runtimeConstants><runtimeConstant name='r' value='v' submissionTimeValueIndex='0'/>"
            "</runtimeConstants>"
            "<envVars><envVar name='E' value='1'/></envVars>"
            "<inputPorts><port index='0' tupleTypeIndex='0'><threadedPort congestionPolicy='dropFirst' "
            "queueSize='10'/></port></inputPorts>"
        )
    ),
    "a bad checkpoint period": _app(OP.format("<checkpointing policy='periodic' period='soon'/>")),
    "an import without a specification": _app(
        OP.replace("primitiveOperInstance", "primitiveImportOperInstance")
    ),
    "annotations and a consistent region": _app(
        OP.format(""),
        composite="<splAnnotation tag='consistentRegion'><value key='index' type='int32'> 2 </value>"
        "<value key='period' type='float64'>1e1</value><value key='trigger' type='rstring'></value>"
        "<value key='maxConsecutiveResetAttempts' type='int32'>5</value></splAnnotation>"
        "<annotation tag='other' internal='true'><value key='k'>v</value></annotation>",
    ),
    "a consistent region index that is not a number": _app(
        OP.format(""),
        composite="<splAnnotation tag='consistentRegion'><value key='index'>two</value></splAnnotation>",
    ),
    "a metric index that is not a number": _app(
        OP.format(""),
        app="<primitiveOperDefinitions><primitiveOperDefinition index='0' kind='k'><customMetricIndicies>"
        "<customMetricIndex>x</customMetricIndex></customMetricIndicies></primitiveOperDefinition>"
        "</primitiveOperDefinitions>",
    ),
    "parallel regions": _app(
        OP.format(""),
        app="<parallelRegions><parallelRegion index='0' name='R'><parallelOperator operIndex='1'>"
        "<splitter kind='Hash' iportIndex='0'><attributes><attribute name='a'/></attributes></splitter>"
        "</parallelOperator><parallelWidth><constantWidth> -3 </constantWidth></parallelWidth>"
        "<replicateHostTag name='t'/></parallelRegion></parallelRegions>",
    ),
    "a region without a width": _app(
        OP.format(""),
        app="<parallelRegions><parallelRegion index='0'><parallelOperator operIndex='1'/></parallelRegion>"
        "</parallelRegions>",
    ),
    "an unknown splitter": _app(
        OP.format(""),
        app="<parallelRegions><parallelRegion index='0' name='R'><parallelOperator operIndex='1'>"
        "<splitter kind='Random' iportIndex='0'/></parallelOperator><parallelWidth><constantWidth>2"
        "</constantWidth></parallelWidth></parallelRegion></parallelRegions>",
    ),
    "a width that is not an integer": _app(
        OP.format(""),
        app="<parallelRegions><parallelRegion index='0' name='R'><parallelOperator operIndex='1'/>"
        "<parallelWidth><submissionTimeParameterIndexForWidth>w</submissionTimeParameterIndexForWidth>"
        "</parallelWidth></parallelRegion></parallelRegions>",
    ),
    "no primitive operators": _app(OP.replace("primitiveOperInstance", "primitiveExportOperInstance")),
    "a v4000 document": _app(OP.format("")).replace(b"v4200", b"v4000"),
    "a duplicate attribute": _app(OP.replace("name='A'", "name='A' name='B'")),
    "an undeclared prefix": _app(OP.format("<z:x/>")),
    "an undefined entity": _app(OP.replace("name='A'", "name='&nope;'")),
    "two roots": _app(OP.format("")) + b"<again/>",
    "empty": b"",
}


@pytest.mark.parametrize("data", EDGES.values(), ids=EDGES.keys())
def test_edge_cases_agree(data: bytes) -> None:
    assert_agree(data)


def test_native_refusals_carry_line_and_reason() -> None:
    with pytest.raises(
        AdlError, match=r"^line 1: <primitiveOperInstance restartable='yes'> is not a boolean$"
    ):
        parse_adl(EDGES["a bad boolean"])
    with pytest.raises(AdlError, match=r"^bundle\.adl: no main composite instance$"):
        parse_adl(
            f"<applicationSet xmlns='{NS}'><splApplication name='x'/></applicationSet>".encode(),
            what="bundle.adl",
        )
    with pytest.raises(AdlError, match=r"out of range \(an xs:unsignedLong\)"):
        # The reference read it into an unbounded int; the native model holds 64 bits, as the schema.
        parse_adl(_app(OP.replace("index='1'", "index='18446744073709551616'")))


def test_deep_nesting_is_read_without_recursion() -> None:
    depth = 5000
    nested = "".join(
        f"<compositeOperInstance index='{100 + i}' definitionIndex='0' name='C{i}'>" for i in range(depth)
    )
    app = parse_adl(_app(nested + OP.format("") + "</compositeOperInstance>" * depth))
    assert len(app.composites) == depth + 1
    assert app.operators[1].composite == 100 + depth - 1


def test_model_values_behave_like_the_dataclasses_they_replace() -> None:
    app = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=2, pools=1)))
    again = parse_adl(synthetic_adl(SyntheticSpec(chains=2, length=2, pools=1)))
    op = app.operators[1]
    assert op == again.operators[1]
    assert hash(op) == hash(again.operators[1])
    assert op != app.operators[2]
    assert op.kind is OperatorKind.PRIMITIVE
    assert op.name is op.name  # attributes hold their Python objects
    assert repr(HostPlacement(pool_index=2)) == (
        "HostPlacement(host=None, pool_index=2, inpool_index=None, colocations=(), exlocations=(), "
        "isolation=False)"
    )
    assert HostPlacement(pool_index=2) == HostPlacement(None, 2) != HostPlacement(pool_index=3)
    with pytest.raises(AttributeError):
        op.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(app)  # its dicts make it unhashable, as the dataclass was


NUMBERS_BASE = synthetic_adl(
    SyntheticSpec(chains=2, length=3, regions=1, width=2, pools=1, colocate_pairs=True, consistent_chains=1)
).decode()
NUMBERS = [m.span(1) for m in re.finditer(r'="(\d+)"', NUMBERS_BASE)]


@settings(max_examples=150, deadline=None)
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, len(NUMBERS) - 1),
            st.sampled_from(["0", "1", "7", "99", "-1", "x", "", " 2", "+3", "1_0"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_corrupted_numbers_agree(edits: list[tuple[int, str]]) -> None:
    text = NUMBERS_BASE
    for which, value in sorted(set(edits), reverse=True):
        start, end = NUMBERS[which]
        text = text[:start] + value + text[end:]
    assert_agree(text.encode())


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(0, len(NUMBERS_BASE)), drop=st.integers(0, 40))
def test_damaged_text_agrees(cut: int, drop: int) -> None:
    assert_agree((NUMBERS_BASE[:cut] + NUMBERS_BASE[cut + drop :]).encode())
