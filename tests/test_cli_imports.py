"""The CLI starts fast because it imports only what the verb run needs: held by the set of modules
a fresh interpreter has loaded (a count and named heavy packages), never by timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from streams_k8s.app.synthetic import SyntheticSpec, write_sab
from streams_k8s.cli import COMMANDS, LazyGroup, main

# The cluster client and its HTTP stack, the operator's settings and metrics, the sandbox: hundreds
# of milliseconds that only the verbs talking to a cluster may pay.
CLUSTER_SIDE = (
    "kubernetes_asyncio",
    "aiohttp",
    "pydantic_settings",
    "prometheus_client",
    "kubernetes_validate",
    "rich",
    "streams_k8s.k8s",
    "streams_k8s.sandbox",
    "streams_k8s.consistent.coordinator",
    "streams_k8s.controller.jobs",
)
# `--help` and `--version` list the verbs and nothing else: no models, no XML, no native core.
HELP_FORBIDDEN = (
    *CLUSTER_SIDE,
    "pydantic",
    "lxml",
    "yaml",
    "orjson",
    "streams_k8s._native",
    "streams_k8s.api",
)
# Modules `streams-k8s --help` may add to a bare interpreter (click and the stdlib it needs: 76 today).
HELP_MODULES = 100
# `plan` of a bundle reads the ADL and plans it into plain records (`app.specs`): the app layer,
# and of the API only its pydantic-free modules. No pydantic and no model (a Job manifest as the
# source is validated by the Job model, which loads them), none of the cluster side; to a table,
# not the serialisers of the other outputs, the controller's ConfigMap renderers (`-o yaml`), the
# CRD writer or the console either.
PLAN_API = {"streams_k8s.api", "streams_k8s.api.contract", "streams_k8s.api.spec_values"}
PLAN_OF_A_BUNDLE_FORBIDDEN = (*CLUSTER_SIDE, "pydantic", "pydantic_core", "streams_k8s.console")
PLAN_FORBIDDEN = (*PLAN_OF_A_BUNDLE_FORBIDDEN, "yaml", "orjson", "streams_k8s.controller")
# Modules it may add to a bare interpreter (125 today: click, lxml, the app layer; 240 with pydantic).
PLAN_MODULES = 150
# Prints the pydantic models of the project whose schema is built.
_BUILT_MODELS = (
    "from pydantic import BaseModel\n"
    "def subclasses(cls):\n"
    "    for sub in cls.__subclasses__():\n"
    "        yield sub\n"
    "        yield from subclasses(sub)\n"
    "for c in subclasses(BaseModel):\n"
    "    if c.__module__.startswith('streams_k8s.') and c.__pydantic_complete__:\n"
    "        print('built', c.__module__ + '.' + c.__qualname__)\n"
)


def _run_then(args: tuple[str, ...], after: str) -> list[str]:
    """What a fresh interpreter prints running ``after`` once `streams-k8s ARGS` ran (exit status
    ignored; the verb's own output goes to a pipe nobody reads)."""
    script = (
        "import contextlib, io, sys\n"
        "from streams_k8s.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({list(args)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"{after}"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def _loaded_after(*args: str) -> set[str]:
    """The modules a fresh interpreter holds after running `streams-k8s ARGS`."""
    return {line for line in _run_then(args, "print('\\n'.join(sys.modules))\n") if line}


def _bare() -> set[str]:
    script = "import sys; print('\\n'.join(sys.modules))"
    return set(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stdout.split())


def _heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in loaded))


def test_help_imports_click_only() -> None:
    loaded = _loaded_after("--help")
    assert _heavy(loaded, HELP_FORBIDDEN) == []
    assert len(loaded - _bare()) <= HELP_MODULES, sorted(loaded - _bare())


def test_version_reads_the_native_core_only() -> None:
    loaded = _loaded_after("--version")
    assert _heavy(loaded, HELP_FORBIDDEN) == ["streams_k8s._native"]


def test_plan_imports_no_cluster_client(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1))
    loaded = _loaded_after("plan", str(sab), "-o", "yaml")
    assert "streams_k8s.app.plan" in loaded  # it did plan
    assert _heavy(loaded, CLUSTER_SIDE) == []


def _api_modules(loaded: set[str]) -> set[str]:
    return {m for m in loaded if m == "streams_k8s.api" or m.startswith("streams_k8s.api.")}


def test_plan_imports_the_app_layer_and_no_model(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=4, length=5, regions=1))
    loaded = _loaded_after("plan", str(sab))
    assert "streams_k8s.app.plan" in loaded
    assert _heavy(loaded, PLAN_FORBIDDEN) == []
    assert _api_modules(loaded) == PLAN_API
    assert len(loaded - _bare()) <= PLAN_MODULES, len(loaded - _bare())


@pytest.mark.parametrize(
    "options",
    [
        ("-o", "yaml"),
        ("-o", "json", "--fusion", "manual=2"),
        ("--width", "*=3", "--fusion", "legacy", "-o", "json"),
        ("--diff", "--width", "*=3", "-o", "yaml"),
    ],
)
def test_plan_of_a_bundle_to_any_output_imports_no_pydantic(tmp_path: Path, options: tuple[str, ...]) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=4, length=5, regions=1, consistent_chains=1))
    loaded = _loaded_after("plan", str(sab), *options)
    assert "streams_k8s.app.plan" in loaded
    assert ("streams_k8s.app.plan_diff" in loaded) == ("--diff" in options)  # the one diff, when asked
    assert _heavy(loaded, PLAN_OF_A_BUNDLE_FORBIDDEN) == []
    assert _api_modules(loaded) == PLAN_API


def test_plan_of_a_job_manifest_validates_it_with_the_job_model(tmp_path: Path) -> None:
    sab = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3, regions=1))
    job = tmp_path / "job.yaml"
    job.write_text(
        f"kind: Job\nmetadata: {{name: j}}\nspec: {{bundle: {{name: {sab.name}, file: {{path: .}}}}}}\n"
    )
    loaded = _loaded_after("plan", str(job))
    assert {"streams_k8s.app.plan", "streams_k8s.api.job", "pydantic"} <= loaded
    assert _heavy(loaded, CLUSTER_SIDE) == []


def test_the_api_package_loads_no_model_for_its_plain_modules() -> None:
    script = (
        "import sys, streams_k8s.api.contract, streams_k8s.api.spec_values; print('\\n'.join(sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert _heavy(loaded, ("pydantic", "pydantic_core")) == []
    assert _api_modules(loaded) == PLAN_API


def test_the_api_models_build_no_schema_at_import() -> None:
    script = "import streams_k8s.api, streams_k8s.api.crd\n" + _BUILT_MODELS
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == []


def test_plan_against_a_file_imports_no_cluster_client(tmp_path: Path) -> None:
    """Offline, `plan --against` loads the job controller's diff (pure) and nothing else of it."""
    (tmp_path / "v2").mkdir()
    old = write_sab(tmp_path / "app.sab", SyntheticSpec(chains=2, length=3))
    new = write_sab(tmp_path / "v2" / "app.sab", SyntheticSpec(chains=2, length=3, rebuilt=frozenset({1})))
    loaded = _loaded_after("plan", str(new), "--against", str(old), "-o", "json")
    jobs = "streams_k8s.controller.jobs"
    assert {m for m in loaded if m.startswith(jobs)} == {jobs, f"{jobs}.upgrade_diff"}  # it did diff
    assert _heavy(loaded, tuple(n for n in CLUSTER_SIDE if n != jobs)) == []


@pytest.mark.parametrize("verb", ["crds", "cr-replay", "schedule"])
def test_offline_verbs_import_no_cluster_client(verb: str) -> None:
    loaded = _loaded_after(verb, "--help")
    assert COMMANDS[verb].module in loaded
    assert _heavy(loaded, CLUSTER_SIDE) == []


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_the_listing_says_what_each_verb_says_of_itself(verb: str) -> None:
    command = main.get_command(click.Context(main), verb)
    assert command is not None
    assert command.name == verb
    assert COMMANDS[verb].summary == command.get_short_help_str(limit=10_000)


def test_a_verb_added_the_eager_way_still_runs_and_is_listed() -> None:
    @click.command("extra")
    def extra() -> None:
        """An eagerly added verb."""
        click.echo("ran extra")

    group = LazyGroup(name="streams-k8s")
    group.add_command(extra)
    lines = CliRunner().invoke(group, ["--help"]).output.splitlines()
    listing = {line.split()[0]: line for line in lines[lines.index("Commands:") + 1 :]}
    assert listing["extra"].endswith(" An eagerly added verb.")
    assert listing["plan"].endswith(" Show the PEs a bundle (.sab/.adl) or Job manifest becomes.")
    assert CliRunner().invoke(group, ["extra"]).output == "ran extra\n"
