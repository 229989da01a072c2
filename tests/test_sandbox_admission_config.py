"""ConfigMaps and Secrets over HTTP, on the sandbox and on kube-apiserver (`writes_fixture`): key
formats, the 1 MiB data limit, base64 data, `stringData`, Secret types and `immutable: true`."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from api_writes import Writes

pytest_plugins = ["writes_fixture"]

CMS = "/api/v1/namespaces/{namespace}/configmaps"
SECRETS = "/api/v1/namespaces/{namespace}/secrets"
MIB = 1024 * 1024


def config_map(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_config_map_keys_are_config_keys(writes: Writes) -> None:
    reply = await writes.create(CMS, config_map("c", data={"a b": "1", "..x": "2", "ok.key_1-2": "3"}))
    assert reply.status == 422
    assert sorted(reply.causes) == [  # kube-apiserver goes over the keys in Go's random map order
        ("data[..x]", "Invalid value: \"..x\": must not start with '..'"),
        (
            "data[a b]",
            "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or "
            "'.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
            "'[-._a-zA-Z0-9]+')",
        ),
    ]


async def test_config_map_data_is_at_most_one_mebibyte(writes: Writes) -> None:
    reply = await writes.create(CMS, config_map("big", data={"a": "x" * MIB, "b": "y"}))
    assert reply.status == 422
    assert reply.message == 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 1048576 bytes",
            "field": "[]",
        }
    ]
    binary = base64.b64encode(b"\0" * (MIB - 10)).decode()
    reply = await writes.create(CMS, config_map("mixed", data={"a": "x" * 11}, binaryData={"b": binary}))
    assert reply.causes == [("[]", "Too long: may not be more than 1048576 bytes")]
    assert (await writes.create(CMS, config_map("fits", data={"a": "x" * (MIB - 1)}))).status == 201


async def test_immutable_config_maps_and_secrets_keep_their_data(writes: Writes) -> None:
    assert (await writes.create(CMS, config_map("frozen", data={"a": "1"}, immutable=True))).status == 201
    reply = await writes.patch(f"{CMS}/frozen", {"data": {"a": "2"}})
    assert reply.status == 422
    assert reply.causes == [("data", "Forbidden: field is immutable when `immutable` is set")]
    reply = await writes.patch(f"{CMS}/frozen", {"immutable": False})
    assert reply.causes == [("immutable", "Forbidden: field is immutable when `immutable` is set")]
    assert (await writes.patch(f"{CMS}/frozen", {"metadata": {"labels": {"a": "b"}}})).status == 200
    assert (
        await writes.create(SECRETS, secret("frozen", data={"k": b64("v")}, immutable=True))
    ).status == 201
    reply = await writes.patch(f"{SECRETS}/frozen", {"data": {"k": b64("w")}})
    assert reply.causes == [("data", "Forbidden: field is immutable when `immutable` is set")]


async def test_secret_data_string_data_types_and_limits(writes: Writes) -> None:
    created = await writes.create(SECRETS, secret("s", stringData={"token": "abc"}))
    assert created.status == 201
    assert created.body["data"] == {"token": b64("abc")}  # stringData is write-only
    assert "stringData" not in created.body
    assert created.body["type"] == "Opaque"
    reply = await writes.patch(f"{SECRETS}/s", {"type": "kubernetes.io/tls"})
    assert ("type", 'Invalid value: "kubernetes.io/tls": field is immutable') in reply.causes
    reply = await writes.create(SECRETS, secret("tls", type="kubernetes.io/tls", data={"tls.crt": b64("c")}))
    assert reply.causes == [("data[tls.key]", "Required value")]
    reply = await writes.create(SECRETS, secret("big", data={"a": b64("x" * (MIB + 1))}))
    assert reply.causes == [("data", "Too long: may not be more than 1048576 bytes")]
    reply = await writes.create(SECRETS, secret("bad", data={"a": "not base64!"}))
    assert reply.status == 400
    assert reply.message.startswith(
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data'
    )


@pytest.mark.sandbox(simulate=False)
async def test_service_accounts_have_subdomain_names(writes: Writes) -> None:
    accounts = "/api/v1/namespaces/{namespace}/serviceaccounts"
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "Operator"}}
    reply = await writes.create(accounts, body)
    assert [f for f, _ in reply.causes] == ["metadata.name"]
    assert (await writes.create(accounts, {**body, "metadata": {"name": "streams.operator"}})).status == 201
