"""``acp-proxy schemas fetch``: install the official ACP schemas from their npm package.

Rules:
- The schemas come from ``@agentclientprotocol/sdk`` (``schema/v1|v2/schema.json`` and
  ``schema.unstable.json``), obtained with the ordinary npm client: ``npm pack PACKAGE@VERSION``
  into a temporary folder. Nothing else is downloaded, and nothing is copied into the project.
- Only those schema files are extracted (``tarfile`` data filter), verified
  (``schema_files.verify``), and then moved whole into ``<cache>/<package version>/`` with a
  ``SOURCE.json`` naming the package, version, tarball and file digests. A half-installed
  folder is never visible: the final rename is atomic. Folders are 0700 and files 0600, as
  everything acp-proxy creates.
- Idempotent: a version already installed and still verifying is reported, not fetched again
  (``force`` fetches anyway).
- Failures (no npm, unknown version, no registry) become ``SchemasUnavailable``, one line.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from acp_proxy.check.schema_files import PACKAGE, SchemaFile, SchemasUnavailable, verify

NPM_TIMEOUT_S = 300
_WANTED = ("schema/v1/", "schema/v2/")


@dataclass(frozen=True, slots=True)
class Installed:
    version: str
    folder: Path
    files: list[SchemaFile]
    fetched: bool  # False when it was already installed


def fetch(spec: str, root: Path, *, npm: str | None = None, force: bool = False) -> Installed:
    """Install ``PACKAGE@spec`` schemas under ``root``; returns what is installed."""
    existing = root / spec
    if not force and existing.is_dir():
        try:
            return Installed(spec, existing, verify(existing)[1], fetched=False)
        except SchemasUnavailable:
            pass  # broken: fetch again
    npm = npm or shutil.which("npm")
    if npm is None:
        raise SchemasUnavailable("npm is not installed: install Node.js (npm), then run again")
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as scratch:
        tarball = _pack(npm, f"{PACKAGE}@{spec}", Path(scratch))
        staging = Path(scratch) / "staging"
        version = _extract(tarball, staging)
        _, files = verify(staging)
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        source = {
            "package": PACKAGE, "version": version, "tarball": tarball.name,
            "tarball_sha256": digest,
            "files": {str(f.path.relative_to(staging)): f.sha256 for f in files},
        }  # fmt: skip
        (staging / "SOURCE.json").write_bytes(orjson.dumps(source, option=orjson.OPT_INDENT_2))
        _make_private(staging)
        target = root / version
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    return Installed(version, target, verify(target)[1], fetched=True)


def _make_private(folder: Path) -> None:
    """Folders 0700 and files 0600, as everything acp-proxy creates."""
    folder.chmod(0o700)
    for path in folder.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)


def _pack(npm: str, package: str, folder: Path) -> Path:
    command = [npm, "pack", package, "--pack-destination", str(folder), "--silent"]
    command += ["--no-fund", "--no-audit", "--no-update-notifier"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False,
            cwd=folder,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SchemasUnavailable(f"npm pack {package} failed: {error}") from error
    tarballs = sorted(folder.glob("*.tgz"))
    if done.returncode != 0 or not tarballs:
        last = (done.stderr.strip().splitlines() or ["no tarball"])[-1]
        raise SchemasUnavailable(f"npm pack {package} failed: {last}")
    return tarballs[0]


def _extract(tarball: Path, staging: Path) -> str:
    """Extract the schema files; returns the package's own version (from package.json)."""
    try:
        with tarfile.open(tarball) as archive:
            manifest = archive.extractfile("package/package.json")
            version = str(orjson.loads(manifest.read() if manifest else b"{}").get("version", ""))
            members = [
                m for m in archive.getmembers()
                if m.isfile() and m.name.startswith(tuple(f"package/{w}" for w in _WANTED))
                and m.name.endswith(".json")
            ]  # fmt: skip
            for member in members:
                member.name = member.name.removeprefix("package/schema/")
            archive.extractall(staging, members=members, filter="data")
    except (tarfile.TarError, KeyError, OSError, orjson.JSONDecodeError) as error:
        raise SchemasUnavailable(
            f"{tarball.name} is not the expected npm package: {error}"
        ) from error
    if not version or not members:
        raise SchemasUnavailable(f"{tarball.name} holds no schema/v1 or schema/v2 files")
    return version
