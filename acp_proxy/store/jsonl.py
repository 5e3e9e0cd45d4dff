"""Sans-I/O: the JSONL export format (docs/recording-format.md, "JSONL export"), both ways.

Rules:
- Line 1 is a header: ``{"format": FORMAT, "version": FORMAT_VERSION, "connection": {...}}``
  with every column of the connection row but ``id``; then one line per frame with every
  column of the frame row but ``id`` and ``connection_id``, ``raw`` as a JSON string when it
  is UTF-8, else ``raw_base64``. Reading a line back gives identical rows and bytes.
- No line holds a raw control character (``display.json_line``: C1 controls, DEL and the
  bidirectional controls are written as ``\\uXXXX``): a terminal showing the file is never
  driven by it, and every value, ``raw`` included, reads back exactly as recorded.
- A redacted export (share/redact.py) adds ``"redaction"`` to the header and ``"redacted"``
  (JSON paths) to the frames it changed; both are information only and never imported.
- A file may hold several exports one after the other (a cassette's episodes): every line
  holding a top-level ``"format"`` member starts the next one (``is_header``); frame lines
  never have one.
- This module knows no database: the export (inspect/export.py) and the import (importer.py)
  read and write rows; here lines become records and records lines.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from acp_proxy.display import json_line

FORMAT = "acp-proxy-jsonl"
FORMAT_VERSION = 1


def header_line(connection: dict[str, Any], **extra: Any) -> bytes:
    """The header line of an export of ``connection`` (its row but ``id``), with ``extra``."""
    header = {"format": FORMAT, "version": FORMAT_VERSION, "connection": connection, **extra}
    return json_line(orjson.dumps(header)) + b"\n"


def frame_line(record: dict[str, Any], redacted: list[str] | None = None) -> bytes:
    """One frame record as a JSONL line (``redacted``: the JSON paths redaction changed)."""
    raw = record.pop("raw")
    try:
        record["raw"] = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        record["raw_base64"] = base64.b64encode(raw).decode()
    if redacted:
        record["redacted"] = redacted
    return json_line(orjson.dumps(record)) + b"\n"


def is_header(line: bytes) -> bool:
    """Whether a line of an export file may be an export's header (see the module rules)."""
    return b'"format"' in line and line.lstrip().startswith(b"{")


def header_of(line: bytes) -> dict[str, Any]:
    """The connection record of a JSONL export's first line (``ValueError`` if it is not one)."""
    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise ValueError(f"the first line is not JSON: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f'not an acp-proxy JSONL export (no "format": "{FORMAT}" header)')
    version = header.get("version")
    if type(version) is not int or version != FORMAT_VERSION:  # ``true`` equals 1 in Python
        shown = orjson.dumps(version).decode()[:20] if version is not None else "none"
        raise ValueError(f"export format version {shown} is not supported")
    connection = header.get("connection")
    if not isinstance(connection, dict) or not isinstance(connection.get("uid"), str):
        raise ValueError("the header has no connection with a uid")  # noqa: TRY004
    return connection


def frame_of(line: bytes) -> dict[str, Any]:
    """One frame record of a JSONL export, with ``raw`` back as bytes."""
    record = orjson.loads(line)
    if not isinstance(record, dict):
        raise ValueError("a frame line is not a JSON object")  # noqa: TRY004
    record.pop("redacted", None)  # what redaction changed: not a column
    if "raw_base64" in record:
        record["raw"] = base64.b64decode(record.pop("raw_base64"), validate=True)
    elif isinstance(record.get("raw"), str):
        record["raw"] = record["raw"].encode("utf-8")
    else:
        raise ValueError("a frame line has neither raw nor raw_base64")
    return record
