"""The OpenAPI documents of what the sandbox serves, as kube-apiserver publishes them: `/openapi/v3`
(an index of group-versions, then one document each) and `/openapi/v2` (one document), with the
schemas of built-in kinds (the release's own, from `admission.builtin_schemas`) and of custom
resources (their CRDs' structural schemas), and a path per operation.

kubectl reads them: `kubectl explain` walks the schemas, and a PATCH operation that declares the
`fieldValidation` parameter tells it to leave validation to the server (`--validate=strict`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from streams_k8s.sandbox.openapi_paths import V2, V3, paths
from streams_k8s.sandbox.openapi_schemas import V2_REFS, V3_REFS, schemas
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.release import KUBERNETES_VERSION

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


class OpenApi:
    """Builds the documents from the registry's current types, cached until the types change."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._cache: dict[str, tuple[int, bytes, str]] = {}

    # -- v3 ---------------------------------------------------------------------------------------

    def v3_index(self) -> dict[str, Any]:
        paths = {}
        for group, version in sorted(self.registry.served):
            path = _gv_path(group, version)
            _, digest = self._document(path)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
        return {"paths": paths}

    def v3(self, path: str) -> bytes | None:
        """One group-version's document (`api/v1`, `apis/apps/v1`), or None if not served."""
        if _split_gv_path(path) not in self.registry.served:
            return None
        return self._document(path)[0]

    def _document(self, path: str) -> tuple[bytes, str]:
        cached = self._cache.get(path)
        if cached is not None and cached[0] == self.registry.types_version:
            return cached[1], cached[2]
        group, version = _split_gv_path(path)
        types = list(self.registry.served[(group, version)].values())
        document = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
            "paths": paths(types, version, V3),
            "components": {
                "schemas": schemas(types, version, V3_REFS),
                "securitySchemes": {
                    "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
                },
            },
            "security": [{"BearerToken": []}],
        }
        encoded = orjson.dumps(document)
        digest = hashlib.sha512(encoded).hexdigest().upper()
        self._cache[path] = (self.registry.types_version, encoded, digest)
        return encoded, digest

    # -- v2 ---------------------------------------------------------------------------------------

    def v2(self) -> bytes:
        cached = self._cache.get("v2")
        if cached is not None and cached[0] == self.registry.types_version:
            return cached[1]
        all_paths: dict[str, Any] = {}
        definitions: dict[str, Any] = {}
        for (_, version), served in sorted(self.registry.served.items()):
            types = list(served.values())
            all_paths.update(paths(types, version, V2))
            definitions.update(schemas(types, version, V2_REFS))
        document = {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
            "paths": all_paths,
            "definitions": definitions,
            "securityDefinitions": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
            "security": [{"BearerToken": []}],
        }
        encoded = orjson.dumps(document)
        self._cache["v2"] = (self.registry.types_version, encoded, "")
        return encoded


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _split_gv_path(path: str) -> tuple[str, str]:
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return "", parts[1]
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return "", ""
