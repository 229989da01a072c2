"""deploy/Dockerfile builds the same image every time, from a small context, with only what the
operator needs (Docker does not run here: the file and .dockerignore are checked as text, with
Docker's own rules where they matter)."""

from __future__ import annotations

import re
import shlex
import tomllib

from repo_paths import REPO

DOCKERFILE = (REPO / "deploy" / "Dockerfile").read_text()
# One logical line per instruction (continuations joined), comments dropped.
INSTRUCTIONS = [
    line.strip()
    for line in re.sub(r"\\\n", " ", DOCKERFILE).splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]
ARGS = dict(
    line.removeprefix("ARG ").split("=", 1)
    for line in INSTRUCTIONS
    if line.startswith("ARG ") and "=" in line
)
STAGES = [line for line in INSTRUCTIONS if line.startswith("FROM ")]
RUNS = [line.removeprefix("RUN ") for line in INSTRUCTIONS if line.startswith("RUN ")]


def _expand(text: str) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: ARGS[m.group(1)], text)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_base_images_and_the_rust_toolchain_are_pinned() -> None:
    images = [_expand(stage.split()[1]) for stage in STAGES]
    assert len(images) == 2
    for image in images:
        tag = image.partition("@")[0].partition(":")[2]
        # an exact release (x.y.z) on a named Debian release: never `latest`, never a moving minor
        assert re.fullmatch(r"\d+\.\d+\.\d+-slim-[a-z]+", tag), image
    assert images[0].startswith(f"rust:{ARGS['RUST_VERSION']}-")
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert _version(ARGS["RUST_VERSION"]) >= _version(cargo["package"]["rust-version"])
    # both stages on one Debian release: the wheel links against the glibc it runs with
    assert {image.rsplit("-", 1)[1] for image in images} == {ARGS["DEBIAN_RELEASE"]}
    assert "rustup" not in DOCKERFILE


def test_builds_use_the_lock_file_and_pinned_tools() -> None:
    builds = [run for run in RUNS if re.search(r"\b(maturin build|cargo (build|install))\b", run)]
    assert builds
    assert all("--locked" in shlex.split(run) for run in builds), builds
    tools = [arg for run in RUNS if "pip install" in run for arg in shlex.split(run) if "maturin" in arg]
    assert tools
    assert all(re.fullmatch(r"maturin==[\d.]+", tool) for tool in tools if "/" not in tool), tools


def test_nothing_is_fetched_but_from_the_registries() -> None:
    for word in ("curl", "wget", "git clone", "http://", "https://"):
        assert not any(word in run for run in RUNS), word
    assert not any(line.startswith("ADD ") for line in INSTRUCTIONS)


def test_the_image_installs_the_wheel_without_extras_as_a_non_root_user() -> None:
    final = INSTRUCTIONS[INSTRUCTIONS.index(STAGES[-1]) :]
    installs = [line for line in final if line.startswith("RUN ") and "pip install" in line]
    assert installs
    for line in installs:
        targets = [
            a for a in shlex.split(line) if not a.startswith("-") and a not in ("RUN", "pip", "install")
        ]
        assert any(t.endswith(".whl") for t in targets), line
        assert not any("[" in t for t in targets), line  # no extras: no sandbox, no test
    user = [line for line in final if line.startswith("USER ")]
    assert user
    assert user[-1].split()[1].split(":")[0] not in ("0", "root")
    assert 'ENTRYPOINT ["streams-k8s"]' in final


def _ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """.dockerignore as Docker reads it: in order, the last matching rule wins, `!` re-includes,
    `**` spans directories, `*` and `?` do not."""
    rules = []
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = line.removeprefix("!").strip("/")
        regex = "".join(
            ".*" if part == "**" else "[^/]*" if part == "*" else "[^/]" if part == "?" else re.escape(part)
            for part in re.split(r"(\*\*|\*|\?)", pattern)
        )
        rules.append((include, re.compile(regex.replace(".*/", "(.*/)?"))))
    return rules


def _in_context(path: str) -> bool:
    excluded = False
    prefixes = ["/".join(path.split("/")[: i + 1]) for i in range(path.count("/") + 1)]
    for include, pattern in _ignore_rules():
        # a rule on a directory covers everything below it
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            excluded = not include
    return not excluded


def test_the_context_keeps_the_big_folders_out() -> None:
    for path in (
        ".venv/lib/python3.11/site-packages/x.py",
        "target/release/libstreams_k8s_native.so",
        ".git/objects/ab/cdef",
        ".mypy_cache/3.11/x.json",
        ".pytest_cache/v/cache/nodeids",
        ".hypothesis/examples/x",
        ".benchmarks/x.json",
        "tests/test_x.py",
        "dist/streams_k8s-0.1.0.whl",
        "python/streams_k8s/_native.abi3.so",  # a local build's, not this image's
        "python/streams_k8s/__pycache__/cli.cpython-311.pyc",
        "streams-sandbox.kubeconfig",
    ):
        assert not _in_context(path), path


def test_the_context_has_everything_the_dockerfile_copies() -> None:
    copied = [
        source
        for line in INSTRUCTIONS
        if line.startswith("COPY ") and "--from=" not in line
        for source in shlex.split(line)[1:-1]
    ]
    assert "LICENSE" in copied  # the wheel's license-files
    for source in copied:
        assert (REPO / source).exists(), source
        files = [p for p in (REPO / source).rglob("*") if p.is_file()] if (REPO / source).is_dir() else []
        for path in [REPO / source, *files[:50]]:
            relative = path.relative_to(REPO).as_posix()
            if "__pycache__" not in relative and not relative.endswith((".so", ".pyc")):
                assert _in_context(relative), relative
