"""What installing the package gives a user: no pytest plugin forced on their own test runs, a
license and complete metadata, and an operator that needs nothing of the sandbox's extra."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
from importlib.metadata import entry_points, files, metadata, packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from repo_paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
PLUGIN = "streams_k8s.sandbox.pytest_plugin"
# Modules only the sandbox imports: cel-python (celpy and what it pulls in) and rich.
SANDBOX_ONLY = ("celpy", "lark", "pendulum", "re2", "jmespath", "rich", "pygments", "markdown_it")
# What runs in the operator's image: the CLI (every command but `sandbox`), the instance operator,
# the consistent-region coordinator and its pool, the scheduler.
OPERATOR_MODULES = (
    "streams_k8s.cli",
    "streams_k8s.controller.operator",
    "streams_k8s.consistent.coordinator",
    "streams_k8s.consistent.pool",
    "streams_k8s.scheduler.kubernetes.standalone",
)


def _pytest(directory: Path, *args: str, blocked: Path | None = None) -> subprocess.CompletedProcess[str]:
    """pytest in ``directory`` as a user runs it there: the package installed, none of our config."""
    (directory / "pytest.ini").write_text("[pytest]\n")
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(directory)}
    if blocked is not None:
        env["PYTHONPATH"] = str(blocked)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_no_pytest_plugin_is_registered_for_every_pytest_run() -> None:
    ours = [ep for ep in entry_points(group="pytest11") if ep.value.startswith("streams_k8s")]
    assert ours == []
    assert "pytest11" not in PROJECT.get("entry-points", {})


def test_a_users_pytest_runs_without_pytest_asyncio(tmp_path: Path) -> None:
    # pytest-asyncio made unimportable (and its own plugin not loaded), as where it is not installed
    blocked = tmp_path / "blocked" / "pytest_asyncio"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pytest_asyncio'\", name='pytest_asyncio')\n"
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_users_own.py").write_text("def test_it():\n    assert True\n")
    done = _pytest(project, "-p", "no:asyncio", blocked=blocked.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_fixtures_load_when_asked_for(tmp_path: Path) -> None:
    (tmp_path / "test_with_sandbox.py").write_text(
        "from kubernetes_asyncio.client import CoreV1Api\n\n"
        "async def test_nodes(sandbox_api):\n"
        "    assert len((await CoreV1Api(sandbox_api).list_node()).items) == 3\n"
    )
    scope = "asyncio_default_fixture_loop_scope=function"
    done = _pytest(tmp_path, "-p", PLUGIN, "-o", "asyncio_mode=auto", "-o", scope)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_projects_own_suite_loads_the_fixtures() -> None:
    assert f"-p {PLUGIN}" in PYPROJECT["tool"]["pytest"]["ini_options"]["addopts"]


def test_license_and_metadata() -> None:
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert PROJECT["license"] == cargo["package"]["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    for field in ("authors", "maintainers", "keywords", "classifiers", "readme", "description"):
        assert PROJECT.get(field), field
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])  # PEP 639: the expression
    # maturin puts the expression and the file into the installed (editable) wheel's metadata.
    installed = metadata("streams-k8s")
    assert installed["License-Expression"] == "Apache-2.0"
    assert installed.get_all("License-File") == ["LICENSE"]
    licenses = [f for f in files("streams-k8s") or () if f.name == "LICENSE"]
    assert [f.read_text() for f in licenses] == [text]


def test_the_sdist_carries_the_license(tmp_path: Path) -> None:
    maturin = Path(sys.executable).with_name("maturin")
    if not maturin.exists():
        pytest.skip("maturin is not installed in this environment")
    done = subprocess.run(
        [str(maturin), "sdist", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {Path(n).relative_to(Path(n).parts[0]).as_posix() for n in archive.getnames()}
        info = archive.extractfile(next(n for n in archive.getnames() if n.endswith("/PKG-INFO")))
        assert info is not None
        pkg_info = info.read().decode()
    assert "LICENSE" in names
    # the console's page assets are package data: in the sdist, hence in every wheel built from it
    assert {"graph.js", "graph.css", "page.css"} <= {
        Path(n).name for n in names if n.startswith("python/streams_k8s/console/static/")
    }
    assert "License-Expression: Apache-2.0" in pkg_info
    assert "License-File: LICENSE" in pkg_info


def test_sandbox_only_dependencies_are_an_extra() -> None:
    core = {Requirement(r).name for r in PROJECT["dependencies"]}
    extra = {Requirement(r).name for r in PROJECT["optional-dependencies"]["sandbox"]}
    providers = packages_distributions()
    for module in ("celpy", "rich"):
        (distribution,) = providers[module]
        assert distribution.lower() in extra, module
        assert distribution.lower() not in core, module
    # `pip install -e '.[test]'` (the README's test command) brings the sandbox's along
    assert "streams-k8s[sandbox]" in PROJECT["optional-dependencies"]["test"]


def test_the_operator_imports_nothing_of_the_sandbox() -> None:
    script = (
        "import json, sys\n"
        f"for name in {OPERATOR_MODULES!r}: __import__(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert {m.partition(".")[0] for m in loaded} & set(SANDBOX_ONLY) == set()
    assert sorted(m for m in loaded if m.startswith("streams_k8s.sandbox")) == []


def test_the_cli_without_the_extra(tmp_path: Path) -> None:
    """Where the extra is not installed: every command but `sandbox` works, and `sandbox` says in one
    line what to install."""
    blocked = "; ".join(
        f"sys.modules[{m!r}] = None" for m in SANDBOX_ONLY
    )  # import raises ModuleNotFoundError
    script = f"import sys; {blocked}; from streams_k8s.cli import main; main()"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    for command in ("run", "coordinator", "plan", "crds", "schedule"):
        assert cli(command, "--help").returncode == 0, command
    assert cli("crds", "-o", str(tmp_path / "crds")).returncode == 0
    for args, module in ((["sandbox", "--duration", "0"], "celpy"), (["sandbox", "--demo"], "rich")):
        done = cli(*args)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"Error: the sandbox needs the package's 'sandbox' extra (module '{module}' is missing): "
            "pip install 'streams-k8s[sandbox]'"
        ]
