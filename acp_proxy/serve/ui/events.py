"""Server-sent events: the database tailed by frame id, and the list of connections.

Rules:
- One look at the database serves every open stream: a single watcher (``Watch``) looks every
  ``POLL_S`` seconds, reads only when SQLite's ``data_version`` says another connection
  committed, and then reads once what every stream needs (the connections' states, the newest
  frame of each connection a stream follows). Streams wait for the watcher's next change and
  only format what it read, so fifty pages cost the server what one does. They wait on an
  event of that change's own (set once, then replaced), never on a lock they share: a stream
  cancelled while it waits (its page closed it) leaves the others waiting as they were.
- A frame event's ``id`` is the frame's id (its rowid), which grows in commit order (see
  store/ui_reads.py), so "after the last id seen" resumes with no gap and no duplicate; the
  browser sends it back as ``Last-Event-ID`` when it reconnects, which beats ``after``.
- With ``frames=0`` the stream says only how far the connection has got: one ``progress``
  event (id: the newest frame id; data: that frame's seq) per change. That is what the page
  uses: it reads the rows it shows itself. With frames (the default) a stream reads the frames
  after its own resume point, still only when the watcher saw a change.
- ``connections`` events (no id: they do not move the resume point) say that the list of
  connections or a status changed; the page reloads what it shows of it.
- The watcher runs while at least one stream is open. A comment line every ``KEEPALIVE_S``
  keeps proxies and the browser from timing the stream out.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
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


@dataclass
class Snapshot:
    """What the watcher read at one change."""

    generation: int = 0
    states: list[list[Any]] = field(default_factory=list)
    newest: dict[int, tuple[int, int]] = field(default_factory=dict)  # cid -> (id, seq)
    # cid -> (after id, last id, the frame events between, encoded once for every stream)
    frames: dict[int, tuple[int, int, bytes]] = field(default_factory=dict)


class Watch:
    """The one watcher of a database for every stream of one server."""

    def __init__(self, inspector: Inspector) -> None:
        self.inspector = inspector
        self.snapshot = Snapshot()
        self.followed: Counter[int] = Counter()  # connection -> streams following it
        self.framed: Counter[int] = Counter()  # connection -> streams that want its frames
        self._tail: dict[int, int] = {}  # connection -> the last frame id encoded
        self._streams = 0
        self._changed = asyncio.Event()  # set when a newer snapshot is there, then replaced
        self._task: asyncio.Task[None] | None = None
        self._db: Any = None

    def _look(self, version: int | None) -> tuple[int | None, Snapshot | None]:
        if self._db is None:
            # A handle of the watcher's own: data_version compares commits seen by one handle.
            self._db = store_read.open_for_reading(self.inspector.db.path)
        now = ui_reads.data_version(self._db)
        if now == version:
            return now, None
        newest = {}
        for cid in list(self.followed):
            found = ui_reads.newest_frame(self._db, cid)
            if found is not None:
                newest[cid] = (found["id"], found["seq"])
        frames: dict[int, tuple[int, int, bytes]] = {}
        full = False
        for cid in list(self.framed):
            start = self._tail.get(cid)
            if start is None:
                # The first stream of it: the watcher takes over from the newest frame; an
                # empty batch up to there tells each stream what to read itself first.
                top = self._tail[cid] = newest.get(cid, (0, 0))[0]
                frames[cid] = (top, top, b"")
                continue
            batch = ui_reads.tail(self._db, start, cid, BATCH)
            if batch:
                blob = b"".join(_event("frame", frame_summary(r), r["id"]) for r in batch)
                frames[cid] = (start, batch[-1]["id"], blob)
                self._tail[cid] = batch[-1]["id"]
                full = full or len(batch) == BATCH
        states = [list(s) for s in ui_reads.connection_states(self._db)]
        # A full batch: more to read at once (the next look reads on, data_version or not).
        return (None if full else now), Snapshot(self.snapshot.generation + 1, states, newest,
                                                 frames)  # fmt: skip

    async def _run(self) -> None:
        version: int | None = None
        followed: set[int] = set()
        try:
            while self._streams:
                if set(self.followed) != followed:
                    followed, version = set(self.followed), None  # a new follower: read now
                version, seen = await run_in_threadpool(self._look, version)
                if seen is not None:
                    self.publish(seen)
                await asyncio.sleep(POLL_S)
        finally:
            db, self._db, self._task = self._db, None, None
            if db is not None:
                db.close()

    def publish(self, seen: Snapshot) -> None:
        """Make ``seen`` the current snapshot and wake the streams that wait for one."""
        self.snapshot = seen
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def generation(self) -> int | None:
        """The current change number while the watcher runs (None: it does not, nothing
        tells changes apart without a look at the database)."""
        return (
            self.snapshot.generation
            if self._task is not None and self.snapshot.generation
            else None
        )

    @contextlib.asynccontextmanager
    async def subscribed(self, connection_id: int | None, frames: bool) -> AsyncIterator[Watch]:
        self._streams += 1
        if connection_id is not None:
            self.followed[connection_id] += 1
            if frames:
                self.framed[connection_id] += 1
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            yield self
        finally:
            self._streams -= 1
            if connection_id is not None:
                self.followed[connection_id] -= 1
                if self.followed[connection_id] <= 0:
                    del self.followed[connection_id]
                if frames:
                    self.framed[connection_id] -= 1
                    if self.framed[connection_id] <= 0:
                        del self.framed[connection_id]
                        self._tail.pop(connection_id, None)

    async def next(self, generation: int, timeout: float) -> Snapshot:
        """The first snapshot after ``generation`` (or the current one after ``timeout``)."""
        if self.snapshot.generation == generation:
            with anyio.move_on_after(timeout):
                await self._changed.wait()
        return self.snapshot


_watches: dict[int, Watch] = {}


def watch_of(inspector: Inspector) -> Watch:
    found = _watches.get(id(inspector))
    if found is None or found.inspector is not inspector:
        found = _watches[id(inspector)] = Watch(inspector)
    return found


async def stream(
    inspector: Inspector, connection_id: int | None, after_id: int, frames: bool = True
) -> AsyncIterator[bytes]:
    """The event stream: frames of ``connection_id`` after ``after_id``, connection changes."""
    watch = watch_of(inspector)
    db = None
    if frames and connection_id is not None:
        db = await run_in_threadpool(store_read.open_for_reading, inspector.db.path)

    async def own(after: int, until: int | None) -> tuple[int, list[bytes]]:
        assert db is not None
        """Frame events after ``after`` (up to id ``until``) read by this stream itself: the
        backlog of a stream that resumes, or one that fell out of step with the watcher."""
        out: list[bytes] = []
        while until is None or after < until:
            found = await run_in_threadpool(ui_reads.tail, db, after, connection_id, BATCH)
            found = [r for r in found if until is None or r["id"] <= until]
            for record in found:
                after = record["id"]
                out.append(_event("frame", frame_summary(record), after))
            if len(found) < BATCH:
                break
        return after, out

    try:
        async with watch.subscribed(connection_id, db is not None):
            yield b"retry: 1000\n\n"
            last_id, states, generation = after_id, None, -1
            quiet_since = time.monotonic()
            if db is not None:
                last_id, backlog = await own(last_id, None)
                if backlog:
                    yield b"".join(backlog)
            while True:
                seen = await watch.next(generation, KEEPALIVE_S)
                changed = seen.generation != generation
                generation = seen.generation
                out: list[bytes] = []
                if changed and connection_id is not None:
                    if db is not None:
                        batch = seen.frames.get(connection_id)
                        if batch is not None and batch[0] == last_id:
                            out.append(batch[2])
                            last_id = batch[1]
                        elif batch is not None and last_id < batch[1]:
                            last_id, mine = await own(last_id, batch[1])
                            out += mine
                    else:
                        newest = seen.newest.get(connection_id)
                        if newest is not None and newest[0] > last_id:
                            last_id = newest[0]
                            out.append(_event("progress", {"seq": newest[1]}, last_id))
                if changed and seen.states != states and seen.generation:
                    states = seen.states
                    out.append(_event("connections", states))
                if out:
                    quiet_since = time.monotonic()
                    yield b"".join(out)
                elif time.monotonic() - quiet_since > KEEPALIVE_S:
                    quiet_since = time.monotonic()
                    yield b": keep-alive\n\n"
    finally:
        if db is not None:
            db.close()
