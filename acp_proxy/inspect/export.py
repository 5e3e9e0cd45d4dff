"""``export``: one connection as JSONL (exact frames), Markdown or HTML.

Rules:
- JSONL (docs/recording-format.md, "JSONL export"): line 1 is a header with the format version
  and every column of the connection row; then one line per frame with every column of the
  frame row (but ``id`` and ``connection_id``), ``raw`` as a JSON string when it is UTF-8, else
  ``raw_base64``. A remote connection's header also holds ``"transport"``: its HTTP exchanges
  and the stream each frame crossed on (store/transport_facts.py). ``store_import`` reads it
  back to identical rows and bytes. A redacted
  export (redact.py) adds ``"redaction"`` to the header and ``"redacted"`` (JSON paths) to the
  frames it changed; both are information only and never imported.
- Markdown and HTML are built from the transcript model, so they read every frame once; HTML
  reads them a second time for its frame timeline. Everything streams to ``out``.
- ``progress`` is called with the number of frames handled since the last call (for a bar).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import orjson

from acp_proxy.inspect.transcript.model import Transcript
from acp_proxy.inspect.transcript.values import TranscriptView
from acp_proxy.store import readers as store_read
from acp_proxy.store.transport_facts import exported_transport

FORMAT = "acp-proxy-jsonl"
FORMAT_VERSION = 1
FORMATS = ("jsonl", "markdown", "html")

Progress = Callable[[int], None]


def _none(_: int) -> None:
    return None


def jsonl_lines(
    db: store_read.Database, connection_id: int, progress: Progress = _none
) -> Iterator[bytes]:
    header: dict[str, Any] = {
        "format": FORMAT, "version": FORMAT_VERSION,
        "connection": {
            k: v for k, v in store_read.connection_record(db, connection_id).items() if k != "id"
        },
    }  # fmt: skip
    transport = exported_transport(db, connection_id)
    if transport is not None:
        header["transport"] = transport
    yield orjson.dumps(header) + b"\n"
    for record in store_read.export_rows(db, connection_id):
        yield frame_line(record)
        progress(1)


def frame_line(record: dict[str, Any], redacted: list[str] | None = None) -> bytes:
    """One frame record as a JSONL line (``redacted``: the JSON paths redaction changed)."""
    raw = record.pop("raw")
    try:
        record["raw"] = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        record["raw_base64"] = base64.b64encode(raw).decode()
    if redacted:
        record["redacted"] = redacted
    return orjson.dumps(record) + b"\n"


def transcript_of(
    db: store_read.Database, connection_id: int, progress: Progress = _none
) -> TranscriptView:
    row = store_read.connection(db, connection_id)
    transcript = Transcript(row.protocol_version)
    for frame in store_read.frames(db, connection_id):
        transcript.apply(frame)
        progress(1)
    return transcript.view()


def export(
    db: store_read.Database, connection_id: int, fmt: str, out: BinaryIO, progress: Progress = _none
) -> None:
    if fmt == "jsonl":
        for line in jsonl_lines(db, connection_id, progress):
            out.write(line)
        return
    row = store_read.connection(db, connection_id)
    view = transcript_of(db, connection_id, progress)
    if fmt == "markdown":
        from acp_proxy.inspect.render.markdown import render_markdown

        out.write(render_markdown(view, row).encode())
        return
    from acp_proxy.inspect.render.html import render_html

    first = store_read.first_mono_ns(db, connection_id)
    frames = store_read.frames(db, connection_id)
    for chunk in render_html(view, row, frames, first):
        out.write(chunk.encode())


def header_of(line: bytes) -> dict[str, Any]:
    """The connection record of a JSONL export's first line (``ValueError`` if it is not one)."""
    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise ValueError(f"the first line is not JSON: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f'not an acp-proxy JSONL export (no "format": "{FORMAT}" header)')
    if header.get("version") != FORMAT_VERSION:
        raise ValueError(f"export format version {header.get('version')} is not supported")
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
