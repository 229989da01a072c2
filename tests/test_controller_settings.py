"""The instance operator's settings from the environment: every variable's name and default."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from streams_k8s.controller.settings import OperatorSettingError, OperatorSettings

VARIABLES = (
    "STREAMS_K8S_BUNDLE_CACHE",
    "POD_NAME",
    "POD_NAMESPACE",
    "STREAMS_K8S_COORDINATOR_MODE",
    "STREAMS_K8S_COORDINATOR_IMAGE",
    "STREAMS_K8S_RETRY_DELAY",
    "STREAMS_K8S_PE_NOTIFICATION_HOST",
    "STREAMS_K8S_PE_NOTIFICATION_PORT",
)


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_defaults(environment: pytest.MonkeyPatch) -> None:
    settings = OperatorSettings.from_environment()
    assert settings.bundle_cache_dir() == Path(tempfile.gettempdir()) / "streams-k8s-bundles"
    assert (settings.pod_name, settings.pod_namespace, settings.pe_notification_host) == (None, None, None)
    assert settings.coordinator_mode.value == "dedicated"
    assert settings.retry_delay == 10.0
    assert settings.pe_notification_port == 10000


def test_every_variable_is_read(environment: pytest.MonkeyPatch, tmp_path: Path) -> None:
    values = {
        "STREAMS_K8S_BUNDLE_CACHE": str(tmp_path),
        "POD_NAME": "operator-0",
        "POD_NAMESPACE": "streams",
        "STREAMS_K8S_COORDINATOR_MODE": "shared",
        "STREAMS_K8S_COORDINATOR_IMAGE": "mine:1",
        "STREAMS_K8S_RETRY_DELAY": "0.5",
        "STREAMS_K8S_PE_NOTIFICATION_HOST": "127.0.0.1",
        "STREAMS_K8S_PE_NOTIFICATION_PORT": "4000",
    }
    for variable, value in values.items():
        environment.setenv(variable, value)
    settings = OperatorSettings.from_environment()
    assert settings.bundle_cache_dir() == tmp_path
    assert (settings.pod_name, settings.pod_namespace) == ("operator-0", "streams")
    assert (settings.coordinator_mode.value, settings.coordinator_image_or("x")) == ("shared", "mine:1")
    assert (settings.retry_delay, settings.pe_notification_host, settings.pe_notification_port) == (
        0.5,
        "127.0.0.1",
        4000,
    )


def test_an_empty_variable_is_unset(environment: pytest.MonkeyPatch) -> None:
    for variable in ("STREAMS_K8S_BUNDLE_CACHE", "POD_NAME", "STREAMS_K8S_PE_NOTIFICATION_HOST"):
        environment.setenv(variable, "")
    settings = OperatorSettings.from_environment()
    assert settings.bundle_cache_dir() == Path(tempfile.gettempdir()) / "streams-k8s-bundles"
    assert (settings.pod_name, settings.pe_notification_host) == (None, None)


def test_a_bad_value_names_its_variable(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("STREAMS_K8S_RETRY_DELAY", "soon")
    with pytest.raises(OperatorSettingError, match="STREAMS_K8S_RETRY_DELAY='soon'"):
        OperatorSettings.from_environment()
