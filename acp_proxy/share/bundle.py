"""Bug-report bundles (``.acpbundle``: a zip): what goes in one, and writing it.

Rules:
- A bundle holds ``manifest.json`` (acp-proxy, agent, client, protocol version, OS, Python,
  the redaction summary, how it was checked), ``frames.jsonl`` (the redacted export,
  re-importable with ``acp-proxy import``), ``check.txt`` and ``check.json`` (the ``check``
  findings), and ``transcript.md`` (the Markdown conversation). Everything in it is derived
  from the redacted frames: they are imported into a temporary database first, and the
  findings and the transcript are read from there. The transcript joins message chunks, so
  it passes the export's redactor once more (a secret split over two chunks is whole only
  there). The placeholder map is never in it.
- Check rules that need the official schemas (ACP000) run only when schemas are installed; if
  not, the other rules run and the manifest says so.
- Reading a bundle (as a REF, by ``import``, by ``redact --verify``) is
  store/recording_files.py's job: it checks the manifest, the members and bounds what is read.
- The manifest says how the bundle was checked: which schemas (their version and where they
  came from, never a path on this machine) or why schema validation did not run.
"""

from __future__ import annotations

import io
import platform
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from acp_proxy import __version__
from acp_proxy.store import readers as store_read
from acp_proxy.store.recording_files import BUNDLE_FORMAT, FRAMES_MEMBER, MANIFEST
from acp_proxy.store.refs import import_temporary


def run_checks(
    db: store_read.Database, connection_id: int, schema_dir: Path | None
) -> tuple[str, str, dict[str, Any]]:
    """``check`` on one connection: its text and JSON reports, and how it was checked."""
    from acp_proxy.check.engine import select_rules
    from acp_proxy.check.report import render_json, render_text
    from acp_proxy.check.schema_files import SchemasUnavailable, origin, origin_text
    from acp_proxy.check.schema_setup import obtain
    from acp_proxy.check.scope_check import check_scope
    from acp_proxy.stderr import report
    from acp_proxy.store.refs import connection_scope

    how: dict[str, Any] = {"schemas": None, "skipped": []}
    source = None
    try:
        book = obtain(schema_dir, report).book
    except SchemasUnavailable:  # its message may name a folder: not in a shared bundle
        book = None
    if book is not None:
        rules = select_rules()
        how["schemas"] = origin(Path(book.source))
        source = origin_text(how["schemas"])
    else:
        rules = select_rules(ignore=["ACP000"])
        how["skipped"] = ["ACP000"]
        how["note"] = "schemas not installed (or not usable): ACP000 (schema validation) not run"
    checked = [check_scope(db, connection_scope(db, connection_id), book, rules)]
    how["rules"] = len(rules)
    how["findings"] = len(checked[0].findings)
    ordered = sorted(rules)
    return render_text(checked, ordered), render_json(checked, ordered, source), how


def _peer(info: Any) -> dict[str, Any] | None:
    if not isinstance(info, dict):
        return None
    return {k: info.get(k) for k in ("name", "title", "version")}


def build_members(
    jsonl: bytes, redaction: dict[str, Any], schema_dir: Path | None,
    redact_text: Callable[[str], str] = str,
) -> dict[str, bytes]:  # fmt: skip
    """Every member of a bundle, from the redacted export ``jsonl``; ``redact_text`` is the
    export's redactor, for the transcript (which joins chunks a secret may be split over)."""
    from acp_proxy.inspect.export import export

    db_path, (connection_id, *_) = import_temporary(iter(io.BytesIO(jsonl)))
    db = store_read.open_for_reading(db_path)
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
        "transcript.md": redact_text(transcript.getvalue().decode()).encode(),
    }


def write_bundle(out: io.BufferedIOBase | Any, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o600 << 16
            bundle.writestr(info, data)
