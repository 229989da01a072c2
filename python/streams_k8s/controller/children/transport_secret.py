"""The job's transport Secret ``<job>-transport``: the certificate and private key its PEs use when
`transportSecurityType` is TLSv1.2 (``transport.cert``, ``transport.key``), owned by the Job and
projected with the job's ConfigMap into the directory the runtime reads (`children.pod`).

Releases before this one kept both in the name-table ConfigMap, where anyone who may read
ConfigMaps saw the key. An upgraded operator moves them: a job's Secret is made with the pair its
ConfigMap holds (`config_map_transport`: its PEs, old and new, keep trusting each other), and once
the Secret holds it the pair is removed from the ConfigMap (`retire_config_map_transport`).

The operator keeps no cache of Secrets (it may read them by name only): the Secret is created with
the job's other children (409: it is there) and read back by name when a job is planned again.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from streams_k8s.api.contract import TRANSPORT_CERT_KEY, TRANSPORT_KEY_KEY, transport_secret_name
from streams_k8s.controller.children.metadata import ChildMetadata
from streams_k8s.k8s.client import KubeClient
from streams_k8s.k8s.errors import ApiError
from streams_k8s.k8s.kinds import CONFIGMAPS, SECRETS
from streams_k8s.k8s.objects import Object, meta


def transport_secret(metadata: ChildMetadata, transport: tuple[str, str]) -> dict[str, Any]:
    """``<job>-transport``: the transport (certificate, key) PEM pair."""
    cert, key = transport
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(transport_secret_name(metadata.job)),
        "type": "Opaque",
        "data": {TRANSPORT_CERT_KEY: _encoded(cert), TRANSPORT_KEY_KEY: _encoded(key)},
    }


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret_transport(secret: Object | None) -> tuple[str, str] | None:
    """The (certificate, key) a transport Secret holds (as rendered or as read back), if any."""
    data = (secret or {}).get("data") or {}
    if TRANSPORT_CERT_KEY not in data or TRANSPORT_KEY_KEY not in data:
        return None
    return base64.b64decode(data[TRANSPORT_CERT_KEY]).decode(), base64.b64decode(
        data[TRANSPORT_KEY_KEY]
    ).decode()


def rendered_transport(children: Iterable[Any]) -> tuple[str, str] | None:
    """The transport pair among a job's rendered children (`Desired`), if it has one."""
    return next((secret_transport(c.body) for c in children if c.resource == SECRETS), None)


def config_map_transport(table: Object | None) -> tuple[str, str] | None:
    """The pair an earlier release put in the job's name-table ConfigMap, if it is still there."""
    data: Mapping[str, str] = (table or {}).get("data") or {}
    if TRANSPORT_CERT_KEY not in data or TRANSPORT_KEY_KEY not in data:
        return None
    return data[TRANSPORT_CERT_KEY], data[TRANSPORT_KEY_KEY]


async def live_secret(client: KubeClient, namespace: str, job: str) -> Object | None:
    """The job's transport Secret as the API server has it (None: there is none)."""
    try:
        return await client.get(SECRETS, transport_secret_name(job), namespace)
    except ApiError as err:
        if err.not_found:
            return None
        raise


async def retire_config_map_transport(client: KubeClient, table: Object | None) -> bool:
    """Remove the transport pair from the job's ConfigMap ``table`` once the job's Secret holds the
    same pair; True when it removed them. Conditional on the ConfigMap's resourceVersion: one
    changed meanwhile is looked at again on the next pass."""
    held = config_map_transport(table)
    if table is None or held is None:
        return False
    m = meta(table)
    namespace, name = str(m["namespace"]), str(m["name"])
    if secret_transport(await live_secret(client, namespace, name)) != held:
        return False  # not made yet: the key must stay where the running PEs' pods read it
    patch = {
        "metadata": {"resourceVersion": m.get("resourceVersion")},
        "data": {TRANSPORT_CERT_KEY: None, TRANSPORT_KEY_KEY: None},
    }
    try:
        await client.patch(CONFIGMAPS, name, patch, namespace)
    except ApiError as err:
        if err.conflict or err.not_found:
            return False
        raise
    return True
