"""`plan -o yaml` writes with libyaml's emitter for speed: its bytes must be the pure-Python
emitter's, on the real bundles and on generated apps with every kind of string a plan carries."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repo_paths import shared_testdata
from streams_k8s.app.synthetic import Exported, Imported, SyntheticSpec, write_sab
from streams_k8s.cli import main

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML built without libyaml")

GENERATED = {
    "regions-pools": SyntheticSpec(chains=4, length=3, regions=2, width=3, pools=2, replicate_pools=True),
    "placement": SyntheticSpec(
        chains=4, length=3, colocate_pairs=True, exlocate_chain_ends=True, isolate_heads=1
    ),
    "consistent": SyntheticSpec(chains=3, length=3, consistent_chains=2),
    "odd-strings": SyntheticSpec(
        name="ns::Ünïcödé\u2028App",
        chains=3,
        length=2,
        exports=(
            Exported(stream="s&<'\"x: y #z"),
            Exported(properties=(("p", "rstring", ('"a\\n\\t"', "'b'")),), allow_filter=True),
        ),
        imports=(
            Imported(application="a::B", stream="- s"),
            Imported(subscription='p == "x" && q > 1', scope="Sc", filter="f < 2"),
        ),
    ),
}


def _both(source: Path) -> tuple[str, str]:
    """The YAML of ``plan -o yaml`` from libyaml, and the same data from the Python emitter."""
    result = CliRunner().invoke(main, ["plan", str(source), "--fusion", "manual=3", "-o", "yaml"])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.stdout)  # notices go to stderr
    return result.stdout, yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, width=10_000)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_apps(tmp_path: Path, name: str) -> None:
    fast, pure = _both(write_sab(tmp_path / "app.sab", GENERATED[name]))
    assert fast == pure


@pytest.mark.parametrize(
    "bundle", ["apps.parallel.Parallel.sab", "apps.hostpools.HostPools.sab", "apps.pubsub.Exporter.sab"]
)
def test_real_bundles(bundle: str) -> None:
    fast, pure = _both(shared_testdata("apps", bundle))
    assert fast == pure
