"""Where the ACP JSON Schemas live on disk, and loading and verifying them.

Rules:
- acp-proxy ships no schema. They are installed per user by ``acp-proxy schemas fetch`` into
  ``$XDG_CACHE_HOME/acp-proxy/schemas/<sdk version>/`` (``~/.cache/...`` when unset), or
  named with ``--schema-dir`` / ``ACP_PROXY_SCHEMAS`` (in that order of precedence). Without
  either, the newest installed version is used.
- A schema folder holds ``v1/`` and/or ``v2/``, each with ``schema.json`` and
  ``schema.unstable.json`` (the layout of the npm package ``@agentclientprotocol/sdk`` and of
  the spec repository); ``meta*.json`` files, when present, are cross-checked.
- Verifying means: every file parses, has ``$defs``, and yields a method map (``x-method``)
  covering ``initialize`` and ``session/update`` and every method a ``meta*.json`` names.
- Problems become ``SchemasUnavailable`` with one line that says how to get the schemas.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.check.schemas import (
    SCHEMA_FILES,
    SchemaBook,
    SchemaError,
    method_map,
    update_variants,
)
from acp_proxy.errors import AcpProxyError

SCHEMAS_ENV = "ACP_PROXY_SCHEMAS"
PACKAGE = "@agentclientprotocol/sdk"
DEFAULT_VERSION = "2.4.0"
VERSIONS = (1, 2)
HOW_TO_GET = (
    "run `acp-proxy schemas fetch` (uses npm), or pass --schema-dir DIR / set ACP_PROXY_SCHEMAS"
)


class SchemasUnavailable(AcpProxyError):
    """No usable schemas: none installed, or the folder named is not a schema folder."""


@dataclass(frozen=True, slots=True)
class SchemaFile:
    version: int
    stability: str
    path: Path
    definitions: int
    methods: int
    update_kinds: int
    sha256: str


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    configured = environ.get("XDG_CACHE_HOME", "")
    base = Path(configured) if configured and os.path.isabs(configured) else Path.home() / ".cache"
    return base / "acp-proxy" / "schemas"


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name))


def installed(root: Path) -> list[Path]:
    """Installed version folders, oldest first."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return sorted(found, key=lambda p: _version_key(p.name))


def find_schema_dir(explicit: Path | None, environ: Mapping[str, str] = os.environ) -> Path:
    """The folder to load: ``--schema-dir``, else ``ACP_PROXY_SCHEMAS``, else the newest install."""
    if explicit is not None:
        return explicit
    configured = environ.get(SCHEMAS_ENV, "")
    if configured:
        return Path(configured)
    versions = installed(cache_root(environ))
    if not versions:
        raise SchemasUnavailable(f"no ACP schemas installed: {HOW_TO_GET}")
    return versions[-1]


def _read(path: Path) -> tuple[bytes, Any]:
    try:
        data = path.read_bytes()
        return data, orjson.loads(data)
    except (OSError, orjson.JSONDecodeError) as error:
        raise SchemasUnavailable(f"cannot read schema {path}: {error}") from error


def verify(folder: Path) -> tuple[dict[tuple[int, str], Any], list[SchemaFile]]:
    """Load and verify every schema document in ``folder``; raises ``SchemasUnavailable``."""
    documents: dict[tuple[int, str], Any] = {}
    files: list[SchemaFile] = []
    for version in VERSIONS:
        for stability, name in SCHEMA_FILES.items():
            path = folder / f"v{version}" / name
            if not path.is_file():
                continue
            data, document = _read(path)
            try:
                methods = method_map(document)
                kinds = update_variants(document)
            except (SchemaError, AttributeError, TypeError) as error:
                raise SchemasUnavailable(f"{path} is not an ACP schema: {error}") from error
            _cross_check(folder / f"v{version}", stability, {m for _, m in methods}, path)
            documents[(version, stability)] = document
            files.append(
                SchemaFile(version, stability, path, len(document["$defs"]),
                           len({m for _, m in methods}), len(kinds),
                           hashlib.sha256(data).hexdigest())
            )  # fmt: skip
    if not documents:
        raise SchemasUnavailable(f"no ACP schemas in {folder} (expected v1/schema.json ...)")
    return documents, files


def _cross_check(folder: Path, stability: str, methods: set[str], path: Path) -> None:
    meta = folder / ("meta.json" if stability == "stable" else "meta.unstable.json")
    if not meta.is_file():
        return  # the npm package ships no meta files; x-method is the method map
    named = {
        method
        for group in ("agentMethods", "clientMethods", "protocolMethods")
        for method in (_read(meta)[1].get(group) or {}).values()
    }
    missing = sorted(named - methods)
    if missing:
        raise SchemasUnavailable(f"{path} defines no {', '.join(missing)} named in {meta.name}")


def load_book(explicit: Path | None, environ: Mapping[str, str] = os.environ) -> SchemaBook:
    """The compiled schemas to check against (see ``find_schema_dir``)."""
    folder = find_schema_dir(explicit, environ)
    if not folder.is_dir():
        raise SchemasUnavailable(f"schema folder {folder} does not exist: {HOW_TO_GET}")
    documents, _ = verify(folder)
    try:
        return SchemaBook(documents, str(folder))
    except (SchemaError, ValueError) as error:
        raise SchemasUnavailable(f"cannot compile the schemas in {folder}: {error}") from error


def origin(folder: Path) -> dict[str, Any]:
    """Which schemas a folder holds, never where it is: package, version and file digests.

    A folder installed by ``schemas fetch`` says it in its ``SOURCE.json``; any other folder
    (``--schema-dir``) is described by the digests of its schema files. Bug-report bundles
    record this, since a path names the user and their machine.
    """
    recorded = folder / "SOURCE.json"
    with_source: Any = None
    if recorded.is_file():
        try:
            with_source = orjson.loads(recorded.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            with_source = None
    if isinstance(with_source, dict) and isinstance(with_source.get("files"), dict):
        return {
            "package": str(with_source.get("package", PACKAGE)),
            "version": str(with_source.get("version", "unknown")),
            "tarball_sha256": with_source.get("tarball_sha256"),
            "files": {str(k): str(v) for k, v in with_source["files"].items()},
        }
    files = {}
    for version in VERSIONS:
        for name in SCHEMA_FILES.values():
            path = folder / f"v{version}" / name
            if path.is_file():
                files[f"v{version}/{name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"package": None, "version": None, "files": files}


def origin_text(described: dict[str, Any]) -> str:
    """``origin`` in a few words: ``@agentclientprotocol/sdk 2.4.0`` or the files' digests."""
    if described.get("package"):
        return f"{described['package']} {described['version']}"
    digests = ", ".join(f"{name} {digest[:12]}" for name, digest in described["files"].items())
    return f"schemas given with --schema-dir ({digests})"


def load_documents(
    explicit: Path | None = None, environ: Mapping[str, str] = os.environ
) -> dict[tuple[int, str], Any]:
    """The verified schema documents (for field descriptions); ``SchemasUnavailable`` if none."""
    folder = find_schema_dir(explicit, environ)
    if not folder.is_dir():
        raise SchemasUnavailable(f"schema folder {folder} does not exist: {HOW_TO_GET}")
    documents, _ = verify(folder)
    return documents
