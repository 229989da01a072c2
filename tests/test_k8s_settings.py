"""Settings from defaults, environment and flags; `streams-k8s run` refuses bad input in one line."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from streams_k8s.cli import main
from streams_k8s.k8s.settings import RuntimeSettings


def test_defaults_follow_client_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    s = RuntimeSettings()
    assert (s.lease_duration, s.renew_deadline, s.retry_period) == (15.0, 10.0, 2.0)
    assert s.leader_election
    assert s.effective_lease_namespace() == "default"


def test_environment_then_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMS_K8S_NAMESPACE", "streams")
    monkeypatch.setenv("STREAMS_K8S_HEALTH_PORT", "9000")
    monkeypatch.setenv("STREAMS_K8S_LEADER_ELECTION", "false")
    s = RuntimeSettings(health_port=9100)
    assert s.namespace == "streams"
    assert s.health_port == 9100
    assert not s.leader_election
    assert s.effective_lease_namespace() == "streams"
    monkeypatch.setenv("POD_NAMESPACE", "operators")
    assert s.effective_lease_namespace() == "operators"


def test_inconsistent_timings_are_refused() -> None:
    with pytest.raises(ValidationError, match="renew_deadline"):
        RuntimeSettings(lease_duration=5, renew_deadline=10)
    with pytest.raises(ValidationError, match="greater than 0"):
        RuntimeSettings(inactivity_timeout=0)


def test_run_without_controllers_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # as in an installation without the instance operator's `streams_k8s.controllers` entry point
    run_module = importlib.import_module("streams_k8s.cli.run")  # the package attribute is the command
    monkeypatch.setattr(run_module, "entry_points", lambda group: [])
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2
    assert "no controllers" in result.output
    assert result.output.count("\n") == 1
    assert "Traceback" not in result.output


def test_run_with_an_unknown_controller_fails_in_one_line() -> None:
    result = CliRunner().invoke(main, ["run", "--controller", "no.such.module:setup"])
    assert result.exit_code == 2
    assert "no.such.module" in result.output
    assert "Traceback" not in result.output


def test_run_with_a_bad_flag_fails_in_one_line() -> None:
    result = CliRunner().invoke(main, ["run", "--controller", "os:getcwd", "--health-port", "99999"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "--health-port" in result.output


def test_run_with_bad_settings_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMS_K8S_LEASE_DURATION", "1")
    result = CliRunner().invoke(main, ["run", "--controller", "os:getcwd"])
    assert result.exit_code == 2
    assert "invalid settings" in result.output
    assert "Traceback" not in result.output


def test_run_with_a_missing_kubeconfig_fails_in_one_line() -> None:
    result = CliRunner().invoke(main, ["run", "--controller", "os:getcwd", "--kubeconfig", "/nonexistent/kc"])
    assert result.exit_code == 2
    assert "/nonexistent/kc" in result.output
    assert "Traceback" not in result.output


def test_run_with_an_invalid_kubeconfig_fails_in_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    result = CliRunner().invoke(main, ["run", "--controller", "os:getcwd", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert result.output.startswith("Error: cannot start:")


def test_a_list_of_namespaces_is_watched_each_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    s = RuntimeSettings(namespace="team-a,team-b,team-a")
    assert s.watched_namespaces() == ("team-a", "team-b")
    assert s.watch_scope() == ("team-a", "team-b")
    assert s.effective_lease_namespace() == "team-a"
    assert RuntimeSettings(namespace="streams").watch_scope() == "streams"
    assert RuntimeSettings().watch_scope() is None  # every namespace


def test_run_with_a_bad_namespace_list_fails_in_one_line() -> None:
    result = CliRunner().invoke(main, ["run", "--controller", "os:getcwd", "--namespace", "team-a, team-b"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "' team-b' is not a namespace name" in result.output
