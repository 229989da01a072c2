"""DESIGN.md's layer table ("Layers (who may import whom)") held as a test.

Every module under ``python/streams_k8s/`` is parsed with ``ast`` and each import of ours is
checked against ``MAY_IMPORT`` below, which restates the table row by row. Counted as imports:
module-level ones, those inside functions (deferred imports are still dependencies), those under
``if TYPE_CHECKING:`` (a type-only import still ties the layers together: the table is about
dependencies, not about what runs), relative ones (resolved) and ``importlib.import_module`` with
a literal name. Not seen: imports whose module name is computed at run time.

Beyond the table's rows:
- every layer may import itself;
- ``streams_k8s`` itself (the package ``__init__``, which holds only ``__version__`` and imports
  nothing of ours) is a leaf every layer may import;
- ``_native`` is the Rust extension module: it has no Python source and imports nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest

from repo_paths import REPO

PACKAGE = "streams_k8s"
SOURCE = REPO / "python" / PACKAGE

# The table of DESIGN.md: layer → what it may import besides itself. An entry is a layer
# ("api") or one module of a layer ("consistent.manifests", which also admits its submodules).
EVERYTHING = "everything"
MAY_IMPORT: Mapping[str, frozenset[str]] = {
    "api": frozenset(),  # nothing of ours
    # The name table and the plan load no API model (so `streams-k8s plan` of a bundle loads no
    # pydantic): of the API, the runtime contract and the specs' enums, limits and defaults only.
    "naming": frozenset({"api.contract", "_native"}),
    "app": frozenset({"api.contract", "api.spec_values", "naming", "_native"}),
    "k8s": frozenset(),  # nothing of ours
    "scheduler": frozenset({"_native"}),  # + k8s in its adapters: ADAPTERS below
    "consistent": frozenset({"api", "k8s", "_native", "scheduler"}),
    "controller": frozenset({"api", "naming", "app", "k8s", "consistent.manifests"}),
    "console": frozenset({"api", "naming", "app", "k8s"}),
    "sandbox": frozenset({"api", "k8s"}),  # k8s: the simulated cluster is a client of any API server
    # The real control plane the tests are judged on: processes and certificates, nothing of ours.
    "control_plane": frozenset(),
    "cli": frozenset({EVERYTHING}),
}
# Parts of a layer that may import more than the rest of it: "scheduler (core uses _native;
# scheduler.kubernetes adapts it) — _native; k8s for its adapters only".
ADAPTERS: Mapping[str, frozenset[str]] = {
    "scheduler.kubernetes": frozenset({"k8s"}),
}
LEAVES = frozenset({"_native"})  # modules of ours that are no layer of the table
ROOT = ""  # `streams_k8s` itself, relative to the package

# Imports today's code makes that the table does not allow, each to be removed by the lead once
# the branch that fixes it is merged: (importing module, imported module) → why and until when.
# Empty: main as of 2026-11-24 keeps the table.
KNOWN_VIOLATIONS: Mapping[tuple[str, str], str] = {}


@dataclass(frozen=True, slots=True)
class Violation:
    module: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported}: {self.rule}"


def _relative(dotted: str) -> str | None:
    """`streams_k8s.a.b` → `a.b`, `streams_k8s` → ROOT, anything else (not ours) → None."""
    if dotted == PACKAGE:
        return ROOT
    if dotted.startswith(PACKAGE + "."):
        return dotted[len(PACKAGE) + 1 :]
    return None


def _within(name: str, entry: str) -> bool:
    return name == entry or name.startswith(entry + ".")


def layer_of(name: str) -> str:
    """The layer of a module of ours, by its name relative to the package (`controller.x` → `controller`)."""
    return name.split(".", 1)[0]


def imports_of(
    module: str, source: str, *, is_package: bool, modules: frozenset[str]
) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import of ours in `source`, by full dotted name.

    `modules` holds every module of ours, so that `from streams_k8s.x import y` is recorded as
    an import of `streams_k8s.x.y` when y is a submodule, of `streams_k8s.x` otherwise.
    """
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source, filename=module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield node.lineno, submodule if submodule in modules else target
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def rule_broken(module: str, imported: str) -> str | None:
    """Why `module` may not import `imported` (both relative to the package), None when it may."""
    if imported == ROOT or imported in LEAVES:
        return None
    layer = layer_of(module)
    if layer not in MAY_IMPORT:
        return f"{layer} is not a layer of DESIGN.md's table; add it there and to MAY_IMPORT"
    if layer_of(imported) == layer:
        return None
    allowed = MAY_IMPORT[layer] | frozenset().union(
        *(extra for part, extra in ADAPTERS.items() if _within(module, part))
    )
    if EVERYTHING in allowed or any(_within(imported, entry) for entry in allowed):
        return None
    permitted = ", ".join(sorted(allowed)) or "nothing of ours"
    wider = [
        f"{part} may also import {', '.join(sorted(extra))}"
        for part, extra in ADAPTERS.items()
        if layer_of(part) == layer and not _within(module, part)
    ]
    return f"{layer} may import {permitted}" + (f" ({'; '.join(wider)})" if wider else "")


def violations(sources: Mapping[str, tuple[str, bool]]) -> list[Violation]:
    """Every import the table forbids; `sources` maps a full module name to (source, is_package)."""
    modules = frozenset(sources)
    found = []
    for module, (source, is_package) in sorted(sources.items()):
        own = _relative(module)
        assert own is not None, module
        for line, imported in imports_of(module, source, is_package=is_package, modules=modules):
            target = _relative(imported)
            if target is None:
                continue
            if own == ROOT:
                found.append(Violation(module, line, imported, f"{PACKAGE} itself imports nothing of ours"))
                continue
            rule = rule_broken(own, target)
            if rule is not None and (own, target) not in KNOWN_VIOLATIONS:
                found.append(Violation(module, line, imported, rule))
    return found


def package_sources() -> dict[str, tuple[str, bool]]:
    sources = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        is_package = path.name == "__init__.py"
        name = ".".join(parts[:-1] if is_package else parts)
        sources[name] = (path.read_text(encoding="utf-8"), is_package)
    return sources


# ---- the package keeps the table ----


def test_every_import_of_ours_is_one_the_layer_table_allows() -> None:
    sources = package_sources()
    assert len(sources) > 100, "the package's modules were not found"
    found = violations(sources)
    assert not found, "imports DESIGN.md's layer table forbids:\n" + "\n".join(map(str, found))


def test_every_layer_in_the_package_is_in_the_table() -> None:
    layers = {layer_of(name) for name in (_relative(m) for m in package_sources()) if name}
    assert layers <= set(MAY_IMPORT) | LEAVES, sorted(layers - set(MAY_IMPORT) - LEAVES)


def test_known_violations_are_still_there() -> None:
    """An allow-list entry whose import is gone must go too, so the list only ever shrinks."""
    sources = package_sources()
    modules = frozenset(sources)
    seen = {
        (_relative(module), _relative(imported))
        for module, (source, is_package) in sources.items()
        for _, imported in imports_of(module, source, is_package=is_package, modules=modules)
    }
    assert set(KNOWN_VIOLATIONS) <= seen, sorted(set(KNOWN_VIOLATIONS) - seen)


# ---- the checker finds what it must ----


def one(module: str, source: str, *, is_package: bool = False, others: tuple[str, ...] = ()) -> list[str]:
    sources = {module: (source, is_package)} | dict.fromkeys(others, ("", False))
    return [str(v) for v in violations(sources)]


def test_a_forbidden_import_is_reported_with_module_import_and_rule() -> None:
    found = one("streams_k8s.api.job", "from streams_k8s.controller import job_controller\n")
    assert found == ["streams_k8s.api.job:1 imports streams_k8s.controller: api may import nothing of ours"]


@pytest.mark.parametrize(
    ("module", "source", "imported"),
    [
        # inside a function
        ("streams_k8s.app.plan", "def f():\n    import streams_k8s.k8s.client\n", "streams_k8s.k8s.client"),
        # type-only
        (
            "streams_k8s.naming.table",
            "import typing\nif typing.TYPE_CHECKING:\n    from streams_k8s.app.model import App\n",
            "streams_k8s.app.model",
        ),
        # relative, resolved against the importing module's package
        ("streams_k8s.sandbox.server", "from ..controller import labels\n", "streams_k8s.controller.labels"),
        # by name at run time
        (
            "streams_k8s.k8s.client",
            "import importlib\nimportlib.import_module('streams_k8s.api')\n",
            "streams_k8s.api",
        ),
        # the scheduler's core may not use k8s; only its adapters may
        (
            "streams_k8s.scheduler.scheduler",
            "from streams_k8s.k8s.client import Client\n",
            "streams_k8s.k8s.client",
        ),
        # the controller may use consistent.manifests only
        (
            "streams_k8s.controller.coordinators",
            "from streams_k8s.consistent.coordinator import Coordinator\n",
            "streams_k8s.consistent.coordinator",
        ),
        ("streams_k8s.controller.coordinators", "import streams_k8s.consistent\n", "streams_k8s.consistent"),
        # no layer may reach the CLI
        ("streams_k8s.consistent.coordinator", "from streams_k8s.cli import main\n", "streams_k8s.cli"),
        # the plan states its objects as records: it may not build the API models
        ("streams_k8s.app.plan", "from streams_k8s.api.job import Fusion\n", "streams_k8s.api.job"),
        ("streams_k8s.app.plan", "from streams_k8s.api import Job\n", "streams_k8s.api"),
        ("streams_k8s.naming.table", "from streams_k8s.api.base import WireModel\n", "streams_k8s.api.base"),
    ],
)
def test_forbidden_imports_are_found_wherever_they_are(module: str, source: str, imported: str) -> None:
    found = one(module, source, others=("streams_k8s.controller.labels",))
    assert len(found) == 1
    assert f"imports {imported}:" in found[0]


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("streams_k8s.api.job", "from streams_k8s.api.base import WireModel\nimport os\n"),
        ("streams_k8s.scheduler.kubernetes.cluster", "from streams_k8s.k8s.client import Client\n"),
        ("streams_k8s.controller.coordinators", "from streams_k8s.consistent.manifests import build\n"),
        ("streams_k8s.controller.coordinators", "from streams_k8s.consistent import manifests\n"),
        ("streams_k8s.controller.coordinators", "from streams_k8s import __version__\n"),
        ("streams_k8s.cli.run", "from streams_k8s.controller import operator\nimport streams_k8s.sandbox\n"),
        ("streams_k8s.naming.table", "from streams_k8s._native import NameTableIndex\n"),
        ("streams_k8s.app.plan", "from streams_k8s.api.spec_values import MAX_WIDTH\n"),
        ("streams_k8s.naming.table", "from streams_k8s.api.contract import pe_host\n"),
        ("streams_k8s.sandbox.server", "from . import errors\nfrom .errors import ApiError\n"),
    ],
)
def test_allowed_imports_pass(module: str, source: str) -> None:
    assert (
        one(module, source, others=("streams_k8s.consistent.manifests", "streams_k8s.sandbox.errors")) == []
    )


def test_a_new_top_level_package_must_join_the_table() -> None:
    found = one("streams_k8s.webhooks.server", "from streams_k8s.api import job\n")
    assert found == [
        "streams_k8s.webhooks.server:1 imports streams_k8s.api: "
        "webhooks is not a layer of DESIGN.md's table; add it there and to MAY_IMPORT"
    ]


def test_the_package_root_stays_a_leaf() -> None:
    found = one("streams_k8s", "from streams_k8s.cli import main\n", is_package=True)
    assert found == ["streams_k8s:1 imports streams_k8s.cli: streams_k8s itself imports nothing of ours"]


def test_the_package_sources_are_found() -> None:
    sources = package_sources()
    assert "streams_k8s.controller.coordinators" in sources
    assert sources["streams_k8s.api"][1]  # a package's __init__ is the package
    assert (SOURCE / "_native.pyi").exists()  # the native module: described by its stub, not parsed


def test_the_rule_names_what_the_layer_may_import() -> None:
    found = one("streams_k8s.scheduler.scheduler", "from streams_k8s.k8s.client import Client\n")
    assert found == [
        "streams_k8s.scheduler.scheduler:1 imports streams_k8s.k8s.client: "
        "scheduler may import _native (scheduler.kubernetes may also import k8s)"
    ]
    found = one("streams_k8s.controller.pe_controller", "from streams_k8s.consistent import fsm\n")
    assert found == [
        "streams_k8s.controller.pe_controller:1 imports streams_k8s.consistent: "
        "controller may import api, app, consistent.manifests, k8s, naming"
    ]
