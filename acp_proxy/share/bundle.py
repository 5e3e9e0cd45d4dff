"""Bug-report bundles (``.acpbundle``: a zip) and recording files used as a REF.

Rules:
- A bundle holds ``manifest.json`` (acp-proxy, agent, client, protocol version, OS, Python,
  the redaction summary, how it was checked), ``frames.jsonl`` (the redacted export,
  re-importable with ``acp-proxy import``), ``check.txt`` and ``check.json`` (the ``check``
  findings), and ``transcript.md`` (the Markdown conversation). Everything in it is derived
  from the redacted frames: they are imported into a temporary database first, and the
  findings and the transcript are read from there. The placeholder map is never in it.
- Check rules that need the official schemas (ACP000) run only when schemas are installed; if
  not, the other rules run and the manifest says so.
- ``open_recording_file``: a REF that is an existing ``.acpbundle``, zip or ``.jsonl`` export,
  or a capture of another tool (``.jsonl``, ``.json``, ``.jsons``, ``.ndjson``: importer.py),
  is imported into a temporary database (deleted when the process exits) and opened
  read-only, so ``show``, ``export``, ``check`` and ``replay`` read it like a recording.
- A JSONL file may hold several episodes (exports one after the other: a cassette,
  docs/testing.md). ``recording_file_episodes`` gives them all (``check`` checks each,
  ``replay`` follows the one the client matches, ``replay --to-agent`` drives each);
  ``open_recording_file`` and ``recording_file_path`` give the first, saying on stderr that
  there are more (``show`` and ``export`` show one conversation; ``import`` the file to reach
  the others by connection id).
"""

from __future__ import annotations

import atexit
import io
import os
import platform
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

import orjson

from acp_proxy import __version__
from acp_proxy.errors import AcpProxyError
from acp_proxy.stderr import report
from acp_proxy.store import readers as store_read

FRAMES_MEMBER = "frames.jsonl"
MANIFEST = "manifest.json"
BUNDLE_FORMAT = "acp-proxy-bundle"
# Bundles, JSONL exports, and captures of other tools (store/captures.py): JSONL of raw frames,
# sacp-conductor traces (.jsons, .ndjson), Zed ACP logs and acp-devtools exports (.json).
SUFFIXES = (".acpbundle", ".zip", ".jsonl", ".json", ".jsons", ".ndjson")


def is_recording_file(ref: str | None) -> TypeGuard[str]:
    """Whether ``ref`` names a bundle or a JSONL export on disk (rather than a recording)."""
    if not ref or not os.path.isfile(ref):
        return False
    return ref.endswith(SUFFIXES) or zipfile.is_zipfile(ref)


def _frames_lines(path: Path) -> Iterator[bytes]:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as bundle:
            if FRAMES_MEMBER not in bundle.namelist():
                raise AcpProxyError(f"{path} is not an acp-proxy bundle (no {FRAMES_MEMBER})")
            with bundle.open(FRAMES_MEMBER) as member:
                yield from member
        return
    with path.open("rb") as handle:
        yield from handle


def _import_temporary(lines: Iterator[bytes], label: str | None = None) -> tuple[Path, list[int]]:
    from acp_proxy.store.importer import import_jsonl

    folder = Path(tempfile.mkdtemp(prefix="acp-proxy-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    db_path = folder / "recording.sqlite"
    return db_path, import_jsonl(db_path, lines, label=label)


def import_temporary(lines: Iterator[bytes]) -> tuple[store_read.Database, int]:
    """Import export lines into a fresh temporary database (removed at exit); open it."""
    db_path, connection_ids = _import_temporary(lines)
    return store_read.open_for_reading(db_path), connection_ids[0]


def recording_file_episodes(ref: str) -> tuple[Path, list[int]]:
    """A bundle or JSONL export named as a REF: (temporary database path, its connections)."""
    try:
        return _import_temporary(_frames_lines(Path(ref)), label=Path(ref).stem)
    except (OSError, zipfile.BadZipFile) as error:
        raise AcpProxyError(f"cannot read {ref}: {error}") from error


def import_recording_files(refs: list[str]) -> Path:
    """Bundles and JSONL exports, every episode of each, in one temporary database (its path)."""
    from acp_proxy.store.importer import import_jsonl

    folder = Path(tempfile.mkdtemp(prefix="acp-proxy-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    db_path = folder / "recordings.sqlite"
    for ref in refs:
        try:
            import_jsonl(db_path, _frames_lines(Path(ref)))
        except (OSError, zipfile.BadZipFile) as error:
            raise AcpProxyError(f"cannot read {ref}: {error}") from error
    return db_path


def _first(ref: str, connection_ids: list[int]) -> int:
    if len(connection_ids) > 1:
        report(f"{ref} holds {len(connection_ids)} episodes; this is episode 1 (import the file "
               "to reach the others)")  # fmt: skip
    return connection_ids[0]


def recording_file_path(ref: str) -> tuple[Path, str]:
    """A bundle or JSONL export named as a REF, as (temporary database path, connection REF)."""
    db_path, connection_ids = recording_file_episodes(ref)
    return db_path, str(_first(ref, connection_ids))


def open_recording_file(ref: str) -> tuple[store_read.Database, int]:
    """A bundle or JSONL export named as a REF, as (database, connection id)."""
    db_path, connection_ids = recording_file_episodes(ref)
    return store_read.open_for_reading(db_path), _first(ref, connection_ids)


def open_recording_episodes(ref: str) -> tuple[store_read.Database, list[int]]:
    """A bundle or JSONL export named as a REF, as (database, every connection id)."""
    db_path, connection_ids = recording_file_episodes(ref)
    return store_read.open_for_reading(db_path), connection_ids


def run_checks(
    db: store_read.Database, connection_id: int, schema_dir: Path | None
) -> tuple[str, str, dict[str, Any]]:
    """``check`` on one connection: its text and JSON reports, and how it was checked."""
    from acp_proxy.check.engine import Checker, select_rules
    from acp_proxy.check.report import Checked, render_json, render_text
    from acp_proxy.check.schema_files import SchemasUnavailable, load_book
    from acp_proxy.store.frames import frames, scope

    how: dict[str, Any] = {"schemas": None, "skipped": []}
    try:
        book = load_book(schema_dir)
        rules = select_rules()
        how["schemas"] = book.source
    except SchemasUnavailable as error:
        book, rules = None, select_rules(ignore=["ACP000"])
        how["skipped"] = ["ACP000"]
        how["note"] = f"schemas not installed, ACP000 (schema validation) not run: {error}"
    target = scope(db, str(connection_id))
    checker = Checker(
        book, rules=rules, protocol_version=target.protocol_version, connection_id=connection_id
    )
    findings, count = [], 0
    for record in frames(db, target):
        count += 1
        findings += checker.observe(record)
    findings += checker.finish()
    checked = [Checked(connection_id, target.label, target.protocol_version, count, findings)]
    how["rules"] = len(rules)
    how["findings"] = len(findings)
    ordered = sorted(rules)
    return render_text(checked, ordered), render_json(checked, ordered, how["schemas"]), how


def _peer(info: Any) -> dict[str, Any] | None:
    if not isinstance(info, dict):
        return None
    return {k: info.get(k) for k in ("name", "title", "version")}


def build_members(
    jsonl: bytes, redaction: dict[str, Any], schema_dir: Path | None
) -> dict[str, bytes]:
    """Every member of a bundle, from the redacted export ``jsonl``."""
    from acp_proxy.inspect.export import export

    db, connection_id = import_temporary(iter(io.BytesIO(jsonl)))
    row = store_read.connection(db, connection_id)
    text, as_json, how = run_checks(db, connection_id, schema_dir)
    transcript = io.BytesIO()
    export(db, connection_id, "markdown", transcript)
    db.close()
    manifest = {
        "format": BUNDLE_FORMAT, "version": 1, "acp_proxy": __version__,
        "recorded_with": row.proxy_version, "uid": row.uid, "label": row.label,
        "agent": _peer(row.agent_info), "client": _peer(row.client_info),
        "protocol_version": row.protocol_version, "status": row.status,
        "exit_code": row.exit_code, "frames": row.frames_c2a + row.frames_a2c + row.lines_stderr,
        "bundled_on": {"os": platform.platform(terse=True), "system": platform.system(),
                       "python": platform.python_version()},
        "redaction": redaction, "check": how,
        "members": [FRAMES_MEMBER, "check.txt", "check.json", "transcript.md"],
    }  # fmt: skip
    return {
        MANIFEST: orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n",
        FRAMES_MEMBER: jsonl,
        "check.txt": text.encode(),
        "check.json": as_json.encode(),
        "transcript.md": transcript.getvalue(),
    }


def write_bundle(out: io.BufferedIOBase | Any, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o600 << 16
            bundle.writestr(info, data)
