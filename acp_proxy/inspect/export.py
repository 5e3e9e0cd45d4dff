"""``export``: one connection as JSONL (exact frames), Markdown or HTML.

Rules:
- JSONL: the rows of one connection in the format of store/jsonl.py (which importer.py reads
  back to identical rows and bytes); a remote connection's header also holds ``"transport"``:
  its HTTP exchanges and the stream each frame crossed on (store/transport_facts.py).
- Markdown and HTML are built from the transcript model, so they read every frame once; HTML
  reads them a second time for its frame timeline. Everything streams to ``out``.
- ``progress`` is called with the number of frames handled since the last call (for a bar).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from acp_proxy.inspect.transcript.model import Transcript
from acp_proxy.inspect.transcript.values import TranscriptView
from acp_proxy.store import readers as store_read
from acp_proxy.store.jsonl import frame_line, header_line
from acp_proxy.store.transport_facts import exported_transport

FORMATS = ("jsonl", "markdown", "html")

Progress = Callable[[int], None]


def _none(_: int) -> None:
    return None


def jsonl_lines(
    db: store_read.Database, connection_id: int, progress: Progress = _none
) -> Iterator[bytes]:
    record = store_read.connection_record(db, connection_id)
    transport = exported_transport(db, connection_id)
    extra = {} if transport is None else {"transport": transport}
    yield header_line({k: v for k, v in record.items() if k != "id"}, **extra)
    for record in store_read.export_rows(db, connection_id):
        yield frame_line(record)
        progress(1)


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
