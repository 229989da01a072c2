"""The sandbox reads request bodies in Kubernetes' protobuf encoding as kube-apiserver does: into
the JSON the Go object marshals to (zero values omitted or kept as the Go types say, times,
quantities and int-or-strings as their strings), and refuses what it cannot read with the real
server's answers: 400 for garbage or truncated bodies, 415 for a custom resource's body, 406 for a
request that accepts protobuf only (the sandbox answers in JSON)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams_k8s.sandbox import Sandbox
from streams_k8s.sandbox.admission import protobuf

pytestmark = pytest.mark.sandbox(simulate=False)

PROTOBUF = "application/vnd.kubernetes.protobuf"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JOBS = "/apis/streams.ibm.com/v1/namespaces/default/streamsjobs"


# -- protobuf, written by hand -----------------------------------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative numbers travel as their 64-bit two's complement
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def body(api_version: str, kind: str, raw: bytes) -> bytes:
    """A protobuf request body: the k8s prefix and a runtime.Unknown holding the object."""
    type_meta = field(1, api_version) + field(2, kind)
    return b"k8s\x00" + field(1, type_meta) + field(2, raw)


def meta(name: str) -> bytes:
    return field(1, field(1, name))


def decode(data: bytes) -> dict[str, Any]:
    envelope = protobuf.read_envelope(data)
    message = protobuf.message_of(envelope.api_version, envelope.kind)
    assert message is not None
    return protobuf.decode_object(envelope, message)


# -- decoding -----------------------------------------------------------------------------------


def test_every_type_that_marshals_its_own_json_is_converted() -> None:
    assert protobuf.table().custom == set(protobuf.CUSTOM_JSON)


def test_zero_values_are_dropped_or_kept_as_the_go_types_say() -> None:
    # Event: metadata and involvedObject are plain structs (kept even empty), count is omitempty,
    # reportingComponent is not; lastTimestamp is a struct whose zero marshals to null.
    event = body("v1", "Event", meta("e") + field(8, 0) + field(14, ""))
    assert decode(event) == {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "e"},
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }
    # a pointer keeps the zero it was given; a nil slice of a field without omitempty is null
    deployment = body("apps/v1", "Deployment", meta("d") + field(2, field(1, 0)))
    assert decode(deployment)["spec"] == {
        "replicas": 0,
        "selector": None,
        "template": {"metadata": {}, "spec": {"containers": None}},
        "strategy": {},
    }
    role = decode(body("rbac.authorization.k8s.io/v1", "Role", meta("r")))
    assert role == {
        "kind": "Role",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "r"},
        "rules": None,
    }


def test_times_quantities_and_int_or_strings() -> None:
    seconds = 1_700_000_000
    event = decode(
        body(
            "v1",
            "Event",
            meta("e")
            + field(6, field(1, seconds) + field(2, 5))  # a Time keeps whole seconds
            + field(7, field(1, 0))  # a Timestamp of zeros is the Unix epoch, not the zero time
            + field(10, field(1, seconds) + field(2, 123_456_789)),  # a MicroTime keeps microseconds
        )
    )
    assert event["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert event["lastTimestamp"] == "1970-01-01T00:00:00Z"
    assert event["eventTime"] == "2023-11-14T22:13:20.123456Z"
    # metadata.creationTimestamp is omitzero (apimachinery 0.37): its zero time is left out
    assert (
        "creationTimestamp"
        not in decode(body("v1", "ConfigMap", field(1, field(1, "c") + field(8, b""))))["metadata"]
    )

    requests = field(1, "cpu") + field(2, field(1, "100m"))  # map entry: key 1, value 2
    container = field(1, "c") + field(2, "img") + field(8, field(2, requests))
    pod = decode(body("v1", "Pod", meta("p") + field(2, field(2, container))))
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}

    port_by_number = field(3, 80) + field(4, field(1, 0) + field(2, 8080) + field(3, ""))
    port_by_name = field(3, 81) + field(4, field(1, 1) + field(2, 0) + field(3, "web"))
    service = decode(
        body("v1", "Service", meta("s") + field(2, field(1, port_by_number) + field(1, port_by_name)))
    )
    assert service["spec"]["ports"] == [{"port": 80, "targetPort": 8080}, {"port": 81, "targetPort": "web"}]


def test_bytes_maps_lists_and_the_wire_s_own_rules() -> None:
    secret = decode(body("v1", "Secret", meta("s") + field(2, field(1, "a") + field(2, b"\x00\xff"))))
    assert secret["data"] == {"a": "AP8="}  # []byte as base64

    extra = field(1, "scopes") + field(2, field(1, "a") + field(1, "b"))  # ExtraValue: the list itself
    review = decode(
        body("authorization.k8s.io/v1", "SubjectAccessReview", field(2, field(3, "bob") + field(5, extra)))
    )
    assert review["spec"] == {"user": "bob", "extra": {"scopes": ["a", "b"]}}

    groups_unpacked = field(4, 1) + field(4, 2)
    groups_packed = varint(4 << 3 | 2) + varint(2) + varint(3) + varint(4)
    context = groups_unpacked + groups_packed + field(2, -1)  # a negative int64: ten bytes on the wire
    spec = field(14, context) + field(99, "an unknown field, skipped")
    assert decode(body("v1", "Pod", meta("p") + field(2, spec)))["spec"]["securityContext"] == {
        "runAsUser": -1,
        "supplementalGroups": [1, 2, 3, 4],
    }
    # a scalar set twice: the last wins; a message set twice: merged
    twice = field(1, field(1, "first") + field(3, "ns")) + field(1, field(1, "second"))
    assert decode(body("v1", "ConfigMap", twice))["metadata"] == {"name": "second", "namespace": "ns"}
    # a volume's source is an embedded struct: its fields sit in the volume's JSON
    volume = field(1, "v") + field(2, field(19, field(1, field(1, "cm"))))
    assert decode(body("v1", "Pod", field(2, field(1, volume))))["spec"]["volumes"] == [
        {"name": "v", "configMap": {"name": "cm"}}
    ]


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=64))
def test_garbage_inside_an_envelope_never_escapes_as_another_error(raw: bytes) -> None:
    with contextlib.suppress(protobuf.UnreadableObject):
        decode(body("v1", "Pod", raw))


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=64))
def test_garbage_bodies_never_escape_as_another_error(data: bytes) -> None:
    with contextlib.suppress(protobuf.UnreadableEnvelope):
        protobuf.read_envelope(b"k8s\x00" + data)


def test_every_truncation_of_a_body_is_refused_or_read() -> None:
    container = (
        field(1, "c") + field(2, "img") + field(8, field(2, field(1, "cpu") + field(2, field(1, "1"))))
    )
    whole = body("v1", "Pod", meta("p") + field(2, field(2, container)))
    for end in range(len(whole)):  # a cut between two fields still leaves a valid message
        with contextlib.suppress(protobuf.UnreadableEnvelope, protobuf.UnreadableObject):
            decode(whole[:end])
    cut_inside = body("v1", "Pod", meta("p") + field(2, field(2, container))[:-3])
    with pytest.raises(protobuf.UnreadableObject, match="^unexpected EOF$"):
        decode(cut_inside)


# -- over HTTP ----------------------------------------------------------------------------------


@pytest.fixture
async def http(sandbox: Sandbox) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(sandbox.url) as session:
        yield session


async def post(http: aiohttp.ClientSession, path: str, data: bytes, **headers: str) -> tuple[int, Any]:
    async with http.post(path, data=data, headers={"Content-Type": PROTOBUF, **headers}) as response:
        assert response.content_type == "application/json"
        return response.status, await response.json()


async def test_a_protobuf_configmap_is_stored_as_its_json(http: aiohttp.ClientSession) -> None:
    cm = (
        meta("settings")
        + field(2, field(1, "a") + field(2, "1"))
        + field(3, field(1, "b") + field(2, b"\x01"))
    )
    status, stored = await post(
        http, CONFIGMAPS, body("v1", "ConfigMap", cm), Accept=f"{PROTOBUF},application/json"
    )
    assert status == 201
    assert stored["data"] == {"a": "1"}
    assert stored["binaryData"] == {"b": "AQ=="}
    assert stored["metadata"]["uid"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"nonsense",
            "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear "
            "to be a protobuf message, expected prefix [107 56 115 0] (6e6f6e73656e7365)",
        ),
        (
            b"k8s\x00",
            "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)",
        ),
        (
            body("v1", "ConfigMap", meta("a-longer-name"))[:-2],  # quoted up to 30 bytes, in hex
            "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF "
            "(6b3873000a0f0a0276311209436f6e6669674d617012110a0f0a0d612d6c ...)",
        ),
        (
            body("v1", "ConfigMap", meta("c")[:-1]),
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: unexpected EOF',
        ),
        (
            body("v1", "ConfigMap", field(1, 7)),
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
            "proto: wrong wireType = 0 for field metadata",
        ),
        (
            body("v1", "Gadget", meta("c")),
            'Gadget in version "v1" cannot be handled as a ConfigMap: no kind "Gadget" is registered '
            'for version "v1" in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"',
        ),
    ],
)
async def test_unreadable_bodies_get_a_400_status(
    http: aiohttp.ClientSession, data: bytes, message: str
) -> None:
    status, answer = await post(http, CONFIGMAPS, data)
    assert status == 400
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


async def test_a_body_that_names_no_kind_is_read_as_the_endpoint_s(http: aiohttp.ClientSession) -> None:
    status, stored = await post(http, CONFIGMAPS, body("", "", meta("anonymous")))
    assert status == 201
    assert (stored["apiVersion"], stored["kind"]) == ("v1", "ConfigMap")


async def test_a_custom_resource_s_protobuf_body_is_refused(http: aiohttp.ClientSession) -> None:
    job = body("streams.ibm.com/v1", "Job", meta("j"))
    status, answer = await post(http, JOBS, job)
    assert (status, answer["reason"]) == (415, "UnsupportedMediaType")
    assert answer["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )
    # without field validation, kube-apiserver gets as far as its decoder, which needs a kind
    status, answer = await post(http, f"{JOBS}?fieldValidation=Ignore", job)
    assert status == 400
    assert answer["message"] == (
        'Job in version "v1" cannot be handled as a Job: '
        "Object 'Kind' is missing in 'object has no kind field '"
    )


async def test_protobuf_delete_options_are_read(http: aiohttp.ClientSession) -> None:
    await post(http, CONFIGMAPS, body("v1", "ConfigMap", meta("kept")))
    dry_run = body("v1", "DeleteOptions", field(5, "All"))
    async with http.delete(
        f"{CONFIGMAPS}/kept", data=dry_run, headers={"Content-Type": PROTOBUF}
    ) as response:
        assert response.status == 200
    async with http.get(f"{CONFIGMAPS}/kept") as response:
        assert response.status == 200  # a dry run deletes nothing
    async with http.delete(
        f"{CONFIGMAPS}/kept", data=b"k8s\x00\x0a", headers={"Content-Type": PROTOBUF}
    ) as response:
        assert response.status == 400
        assert (await response.json())["message"] == "unexpected EOF"


async def test_a_request_that_accepts_protobuf_only_gets_a_406(http: aiohttp.ClientSession) -> None:
    async with http.get(CONFIGMAPS, headers={"Accept": PROTOBUF}) as response:
        assert response.status == 406
        answer = await response.json()
    assert (answer["reason"], answer["message"]) == (
        "NotAcceptable",
        "only the following media types are accepted: application/json",
    )
    async with http.get(CONFIGMAPS, headers={"Accept": f"{PROTOBUF}, application/json"}) as response:
        assert response.status == 200
        assert response.content_type == "application/json"
