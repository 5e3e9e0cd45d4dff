"""Server-sent events: the database tailed by frame id, and the list of connections.

Rules:
- A frame event's ``id`` is the frame's id (its rowid), which grows in commit order (see
  store/ui_reads.py), so "after the last id seen" resumes with no gap and no duplicate; the
  browser sends it back as ``Last-Event-ID`` when it reconnects, which beats ``after``.
- With ``frames=0`` the stream says only how far the connection has got: one ``progress``
  event (id: the newest frame id; data: that frame's seq) per look that found new frames.
  That is what the page uses: it reads the rows it shows itself, so a fast stream costs the
  server one small query per look instead of a JSON object per frame.
- ``connections`` events (no id: they do not move the resume point) say that the list of
  connections or a status changed; the page reloads the list.
- The database is looked at every ``POLL_S`` seconds, and read only when ``data_version``
  says another connection committed. A comment line every ``KEEPALIVE_S`` keeps proxies and
  the browser from timing the stream out.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
from starlette.concurrency import run_in_threadpool

from acp_proxy.serve.ui.present import frame_summary
from acp_proxy.serve.ui.state import Inspector
from acp_proxy.store import readers as store_read
from acp_proxy.store import ui_reads

POLL_S = 0.1
KEEPALIVE_S = 15.0
BATCH = 500


def _event(name: str, data: Any, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {name}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"


async def stream(
    inspector: Inspector, connection_id: int | None, after_id: int, frames: bool = True
) -> AsyncIterator[bytes]:
    """The event stream: frames of ``connection_id`` after ``after_id``, connection changes."""

    # A handle of this stream's own: data_version compares commits seen by one connection.
    db = await run_in_threadpool(store_read.open_for_reading, inspector.db.path)

    def look(last_id: int, version: int | None) -> tuple[int, Any, list[dict[str, Any]], Any]:
        now = ui_reads.data_version(db)
        if now == version:
            return now, None, [], None
        found: list[dict[str, Any]] = []
        if connection_id is not None and frames:
            found = ui_reads.tail(db, last_id, connection_id, BATCH)
        elif connection_id is not None:
            newest = ui_reads.newest_frame(db, connection_id)
            if newest is not None and newest["id"] > last_id:
                found = [newest]
        return now, ui_reads.connection_states(db), found, None

    try:
        async for chunk in _follow(look, after_id, "frame" if frames else "progress"):
            yield chunk
    finally:
        db.close()


async def _follow(look: Any, after_id: int, name: str) -> AsyncIterator[bytes]:
    yield b"retry: 1000\n\n"
    last_id, version, states = after_id, None, None
    quiet_since = time.monotonic()
    while True:
        version, seen, frames, _ = await run_in_threadpool(look, last_id, version)
        for record in frames:
            last_id = record["id"]
            data = frame_summary(record) if name == "frame" else {"seq": record["seq"]}
            yield _event(name, data, last_id)
        if len(frames) == BATCH:
            version = None  # more to read at once
        if seen is not None and seen != states:
            states = seen
            yield _event("connections", [list(s) for s in seen])
        if frames or seen is not None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield b": keep-alive\n\n"
        if not frames or len(frames) < BATCH:
            await anyio.sleep(POLL_S)
