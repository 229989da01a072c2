"""CRDs installed into the registry as `kubectl apply` of their manifests would: one object, or
every CustomResourceDefinition in a directory's YAML files (Lists included)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from streams_k8s.sandbox.crds import CRD_KEY
from streams_k8s.sandbox.errors import ApiError
from streams_k8s.sandbox.registry import Registry
from streams_k8s.sandbox.store import clone

log = logging.getLogger(__name__)


def install_crd(registry: Registry, crd: dict[str, Any]) -> None:
    """Create (or replace) a CustomResourceDefinition."""
    crd = clone(crd)  # the registry keeps what it is given
    rt = registry.types[CRD_KEY]
    existing = registry.find(rt, None, crd["metadata"]["name"])
    if existing is None:
        registry.create(rt, "v1", None, crd)
    else:
        crd["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        registry.update(rt, "v1", None, crd["metadata"]["name"], crd)


def install_crds(registry: Registry, directory: Path) -> int:
    """Install every CRD in the YAML files of a directory; returns how many."""
    if not directory.is_dir():
        log.info("no CRD directory at %s: no custom resources installed from it", directory)
        return 0
    count = 0
    for path in sorted(directory.glob("*.y*ml")):
        try:
            for doc in _crd_file(path, path.stat().st_mtime_ns):
                install_crd(registry, doc)
                count += 1
        except (ApiError, yaml.YAMLError) as err:
            raise ValueError(f"{path}: {err}") from None
    return count


@lru_cache(maxsize=64)
def _crd_file(path: Path, mtime_ns: int) -> tuple[dict[str, Any], ...]:
    """The CRDs of a YAML file, parsed once per version of the file (sandboxes start often)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(_crd_documents(yaml.load_all(path.read_text(), Loader=loader)))


def _crd_documents(docs: Iterable[Any]) -> Iterable[dict[str, Any]]:
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            yield doc
        elif isinstance(doc, dict) and doc.get("kind") == "List":
            yield from _crd_documents(doc.get("items") or [])
