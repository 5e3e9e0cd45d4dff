"""What the inspector keeps between requests: read-only database handles and per-connection
indexes (timeline rows, findings, transcript), each extended as a recording grows.

Rules:
- One read-only SQLite connection per worker thread (``Database.get``); requests run their
  queries in worker threads, never on the event loop.
- Indexes only ever extend: a timeline index is fed the frames after the last one it saw, the
  rule engine and the transcript model likewise. Each has its own lock, held while extending.
- Work per request is bounded (``SCAN_STEP`` frames of index, ``BACKGROUND_STEP`` when indexing
  ahead): a million-frame recording is indexed over several requests while the first screen
  is already shown, and the page is told how far the index has got.
- Findings come from the same rule engine as ``acp-proxy check`` (schemas when installed), so
  the page and the command agree, checked in a process of its own (checking.py); stored
  findings (``record --check``) are shown as well. The checker writes its findings into a
  file of the inspector's own temporary folder (deleted by ``close``), never held in memory;
  a page reads those of the frames it shows (a range of seqs), or ``FINDINGS_PAGE`` at a time
  in order, and a frame's own are looked up by its seq.
- Quick reads first (turns.py): indexing ahead of what a page asked for and the background
  reading of a transcript wait, step by step, while a quick read is on its way.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.errors import UnreadableRecording
from acp_proxy.inspect.transcript.model import Transcript
from acp_proxy.serve.ui.checking import CheckProcess, load_schemas, lower_priority
from acp_proxy.serve.ui.rows import RowIndex
from acp_proxy.serve.ui.turns import QuickFirst
from acp_proxy.store import readers as store_read
from acp_proxy.store import ui_reads
from acp_proxy.store.readers import FrameFilter

__all__ = ["Database", "Inspector", "load_schemas"]

SCAN_STEP = 20_000
BACKGROUND_STEP = 2_000
FIRST_STEP = 2_000
QUICK_REACH = 20_000
SCAN_BUDGET_S = 0.25
FINDINGS_PAGE = 5_000
YIELD_S = 0.005
FILTERED_INDEXES = 16
MEMO_ENTRIES = 64
TRANSCRIPT_STEP = 1_000
TRANSCRIPT_BUDGET_S = 0.1


class Database:
    """Read-only handles on one recording database, one per thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        store_read.open_for_reading(path).close()  # fails now, with one line, if it cannot open

    def get(self) -> store_read.Database:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = store_read.open_for_reading(self.path)
        return db


@dataclass
class _Timeline:
    index: RowIndex = field(default_factory=RowIndex)
    lock: threading.Lock = field(default_factory=threading.Lock)
    complete: bool = False  # every frame indexed and the connection ended
    caught_up: bool = False  # every frame committed so far indexed


@dataclass
class _Conversation:
    transcript: Transcript
    lock: threading.Lock = field(default_factory=threading.Lock)
    applied_seq: int = 0
    view: tuple[int, Any] | None = None  # (applied seq, the transcript's view)
    built: tuple[int, Any, Any] | None = None  # (applied seq, head, entries)


class Inspector:
    """The server's state: the database, the schemas, and the indexes of each connection."""

    def __init__(self, db: Database, schemas: Any = None, documents: Any = None) -> None:
        self.db = db
        self.schemas = schemas  # a SchemaBook, or None: ACP000 does not run
        self.documents = documents  # parsed schema documents for field descriptions, or None
        self._lock = threading.Lock()
        self._timelines: OrderedDict[tuple[int, tuple[Any, ...]], _Timeline] = OrderedDict()
        self._checks: dict[int, CheckProcess] = {}
        self._scratch: Path | None = None  # the checkers' findings files, made when first needed
        self.turns = QuickFirst()
        self._conversations: dict[int, _Conversation] = {}
        self._answers: dict[tuple[int, int], tuple[int, Any]] = {}  # (cid, seq) -> (seen, ans)
        self._reading: set[int] = set()
        self._counts: dict[int, tuple[int, int, int, int]] = {}  # last seq, turns, errors, bad
        self._memo: OrderedDict[tuple[Any, ...], tuple[tuple[int, ...], Any]] = OrderedDict()

    # ------------------------------------------------------------------ recordings

    def head(self, connection_id: int) -> dict[str, Any] | None:
        """A connection's row and first and last frames (no scan of its frames)."""
        return ui_reads.connection_head(self.db.get(), connection_id)

    def exists(self, connection_id: int) -> bool:
        return ui_reads.connection_exists(self.db.get(), connection_id)

    def overview(self, connection_id: int) -> dict[str, Any] | None:
        """``head`` plus turns, errors and malformed frames, counted once per frame."""
        found = self.head(connection_id)
        if found is None:
            return None
        db = self.db.get()
        with self._lock:
            counted = self._counts.get(connection_id, (0, 0, 0, 0))
        if counted[0] < found["last_seq"]:
            last, turns, errors, malformed = ui_reads.frame_counts(db, connection_id, counted[0])
            counted = (last, counted[1] + turns, counted[2] + errors, counted[3] + malformed)
            with self._lock:
                self._counts[connection_id] = counted
        found.update(turns=counted[1], errors=counted[2], malformed=counted[3],
                     sessions=ui_reads.sessions(db, connection_id))  # fmt: skip
        return found

    def overviews(self) -> list[dict[str, Any]]:
        """Every connection's overview; computed once per change of the database, however
        many pages ask."""
        db = self.db.get()
        stamp = ui_reads.change_stamp(db)
        with self._lock:
            memo = self._memo.get(("overviews",))
        if memo is not None and memo[0] == stamp:
            return memo[1]  # type: ignore[no-any-return]
        found = (self.overview(i) for i in ui_reads.connection_ids(db))
        result = [f for f in found if f is not None]
        self._remember(("overviews",), stamp, result)
        return result

    def _remember(self, key: tuple[Any, ...], stamp: tuple[int, ...], value: Any) -> None:
        with self._lock:
            self._memo[key] = (stamp, value)
            self._memo.move_to_end(key)
            while len(self._memo) > MEMO_ENTRIES:
                self._memo.popitem(last=False)

    # ------------------------------------------------------------------ timeline

    def _timeline(self, connection_id: int, where: FrameFilter, start: int = 0) -> _Timeline:
        key = (connection_id, (*where.key(), start))
        with self._lock:
            timeline = self._timelines.get(key)
            if timeline is None:
                timeline = self._timelines[key] = _Timeline()
                timeline.index.scanned_seq = max(0, start - 1)
                plain = (*FrameFilter().key(), 0)
                unfiltered = sum(1 for k in self._timelines if k[1] != plain)
                if unfiltered > FILTERED_INDEXES:  # forget the oldest filtered index
                    oldest = next(k for k in self._timelines if k[1] != plain)
                    del self._timelines[oldest]
            else:
                self._timelines.move_to_end(key)
            return timeline

    def extend(
        self,
        connection_id: int,
        where: FrameFilter,
        wanted_rows: int,
        *,
        scan: bool = False,
        start: int = 0,
        budget_s: float = SCAN_BUDGET_S,
        until_seq: int = 0,
    ) -> _Timeline:
        """Index at least ``wanted_rows`` rows and up to frame ``until_seq`` (or all there
        are; never past ``budget_s`` for ``until_seq``); with ``scan``, go on indexing for
        ``budget_s`` (a large recording's index grows call by call). ``start``: the timeline
        that begins at that frame. The lock is held for one step at a time, so a request for
        rows already indexed never waits for a long scan."""  # fmt: skip
        timeline = self._timeline(connection_id, where, start)
        db = self.db.get()
        deadline = time.monotonic() + budget_s
        step = FIRST_STEP
        ahead = False  # indexing past what was asked for: background work
        while True:
            if ahead and not self.turns.background_turn(deadline - time.monotonic()):
                return timeline  # quick reads kept coming until the deadline
            with timeline.lock:
                index = timeline.index
                reached = len(index) >= wanted_rows and index.scanned_seq >= until_seq
                if reached and (not scan or time.monotonic() > deadline):
                    return timeline
                if not reached and until_seq and time.monotonic() > deadline:
                    return timeline
                if reached and not ahead:  # from here on, each step waits its turn
                    ahead, step = True, min(step, BACKGROUND_STEP)
                    continue
                status = store_read.status(db, connection_id)  # read first: frames land before it
                keys = ui_reads.scan_keys(db, connection_id, where, index.scanned_seq, step)
                if index.feed(keys) < step:
                    timeline.caught_up = True
                    timeline.complete = status != "running"
                    return timeline
                timeline.caught_up = timeline.complete = False
            step = min(step * 2, BACKGROUND_STEP if ahead else SCAN_STEP)

    def rows(
        self,
        connection_id: int,
        where: FrameFilter,
        offset: int,
        limit: int,
        scan: bool = False,
        begin: int = 0,
    ) -> dict[str, Any]:
        """Rows ``[offset, offset + limit)`` of the timeline, with how far the index got."""
        from acp_proxy.serve.ui.present import frame_summary, run_text

        db = self.db.get()
        key = ("rows", connection_id, where.key(), begin, offset, limit)
        stamp = ui_reads.change_stamp(db)
        with self._lock:
            memo = self._memo.get(key)
        if memo is not None and memo[0] == stamp and not scan:
            return memo[1]  # type: ignore[no-any-return]
        timeline = self.extend(connection_id, where, offset + limit, scan=scan, start=begin)
        index = timeline.index
        with timeline.lock:
            total = len(index)
            window = [index.row(i) for i in range(max(0, offset), min(total, offset + limit))]
            scanned = index.scanned_seq
        found = ui_reads.summaries_at(db, connection_id, [first for first, _, _ in window])
        rows = []
        for position, (start, end, count) in enumerate(window, start=max(0, offset)):
            record = found.get(start)
            if record is None:
                continue
            row: dict[str, Any] = {
                "index": position, "first_seq": start, "last_seq": end, "count": count,
                "frame": frame_summary(record),
            }  # fmt: skip
            if count > 1:
                heads = ui_reads.frames_between(db, connection_id, where, start, end, 200)
                row["text"] = run_text([(h["head"], h["size"]) for h in heads])
            if record["kind"] == "request":
                answer = self.answer(connection_id, start)
                if answer is not None:
                    row["pair_seq"] = answer["seq"]
                    row["latency_ns"] = answer["mono_ns"] - record["mono_ns"]
            elif record.get("request_seq") is not None:
                row["pair_seq"] = record["request_seq"]
                row["latency_ns"] = record.get("latency_ns")
            rows.append(row)
        result = {
            "total": total, "complete": timeline.complete, "caught_up": timeline.caught_up,
            "scanned_seq": scanned,
            "offset": offset, "rows": rows,
        }  # fmt: skip
        if timeline.caught_up:  # a partial index grows call by call: not the same answer
            self._remember(key, stamp, result)
        return result

    def locate(
        self,
        connection_id: int,
        where: FrameFilter,
        seq: int,
        start: int = 0,
        budget_s: float | None = None,
    ) -> dict[str, Any]:
        """The row index of frame ``seq`` under ``where`` (indexing up to it if needed).

        With ``budget_s``, index for at most that long, and not at all when the frame is more
        than ``QUICK_REACH`` frames beyond the index: ``behind`` then says the index has not
        reached the frame (the page opens the timeline that starts near it instead).
        """  # fmt: skip
        timeline = self._timeline(connection_id, where, start)
        with timeline.lock:
            scanned = timeline.index.scanned_seq
        far = seq - scanned > QUICK_REACH
        if budget_s is None or not far:
            budget = float("inf") if budget_s is None else budget_s
            self.extend(connection_id, where, 0, start=start, budget_s=budget, until_seq=seq)
        with timeline.lock:
            index = timeline.index
            found = index.find(seq)
            reached = index.scanned_seq >= seq or timeline.caught_up
            return {"index": found, "total": len(index), "caught_up": timeline.caught_up,
                    "behind": not reached, "scanned_seq": index.scanned_seq}  # fmt: skip

    def answer(self, connection_id: int, request_seq: int) -> dict[str, Any] | None:
        """The response to a request (cached; looked for again only when frames were added)."""
        db = self.db.get()
        key = (connection_id, request_seq)
        last = store_read.last_seq(db, connection_id)
        cached = self._answers.get(key)
        if cached is not None and (cached[1] is not None or cached[0] == last):
            return cached[1]  # type: ignore[no-any-return]
        found = ui_reads.answer_of(db, connection_id, request_seq)
        self._answers[key] = (last, found)
        return found

    # ------------------------------------------------------------------ findings

    def start_checking(self, connection_id: int) -> None:
        """Check the connection in a process of its own (checking.py), following it while it
        is live; once per connection."""
        with self._lock:
            if connection_id in self._checks:
                return
            if self._scratch is None:
                self._scratch = Path(tempfile.mkdtemp(prefix="acp-proxy-ui-"))
            self._checks[connection_id] = CheckProcess.start(
                self.db.path, connection_id, self.schemas is not None,
                self._scratch / f"findings-{connection_id}.sqlite",
            )  # fmt: skip

    def findings(
        self,
        connection_id: int,
        since: int = 0,
        limit: int = FINDINGS_PAGE,
        frames: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        """Findings of the check so far, as JSON ready to send (``orjson.Fragment``): those of
        frames ``frames = (first, last)`` by frame, or else ``[since, since + limit)`` in the
        order found; at most ``limit``. ``rules``: the words of their rules; ``total``: how
        many so far; ``more``: some after these; ``stored``: the stored findings (of those
        frames).

        ``complete``: every frame committed so far is checked; ``finished``: the connection
        has ended and so have its checks. Nothing is checked before ``start_checking``.
        """
        db = self.db.get()
        with self._lock:
            running = self._checks.get(connection_id)
        found: list[tuple[str, bytes]] = []
        rules: dict[str, bytes] = {}
        total, checked, finished, more = 0, 0, False, False
        if running is not None:
            with running.lock:
                if running.failed is not None:
                    raise UnreadableRecording(running.failed)
                total, checked, finished = running.found, running.checked_seq, running.finished
            if frames is not None:
                found = running.findings.between(frames[0], frames[1], limit + 1)
            elif since < total:  # only those the checker has said it committed
                found = running.findings.page(since, min(limit, total - since))
            more = len(found) > limit if frames is not None else since + len(found) < total
            found = found[:limit]
            rules = running.findings.rules(rule for rule, _ in found)
        complete = finished or (running is not None and checked >= store_read.last_seq(
            db, connection_id))  # fmt: skip
        return {
            "findings": [orjson.Fragment(f) for _, f in found], "total": total,
            "more": more, "checked_seq": checked,
            "rules": {rule: orjson.Fragment(words) for rule, words in rules.items()},
            "complete": complete, "finished": finished, "schemas": self.schemas is not None,
            "stored": ui_reads.stored_findings(db, connection_id, frames),
        }  # fmt: skip

    def frame_findings(self, connection_id: int, seq: int) -> tuple[list[Any], list[Any]]:
        """The findings of one frame so far, and the stored ones (``record --check``)."""
        with self._lock:
            running = self._checks.get(connection_id)
        own = running.findings.of_frame(seq) if running is not None else []
        stored = ui_reads.stored_findings(self.db.get(), connection_id, (seq, seq))
        return own, stored

    def check_progress(self, connection_id: int) -> dict[str, Any]:
        """Whether the check has started, the last frame it has checked, whether it finished."""
        with self._lock:
            running = self._checks.get(connection_id)
        if running is None:
            return {"started": False, "checked_seq": 0, "finished": False}
        with running.lock:
            return {"started": True, "checked_seq": running.checked_seq,
                    "finished": running.finished}  # fmt: skip

    def close(self) -> None:
        """End the checker processes."""
        with self._lock:
            checks, self._checks = list(self._checks.values()), {}
            scratch, self._scratch = self._scratch, None
        for running in checks:
            running.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    # ------------------------------------------------------------------ conversation

    def _conversation(self, connection_id: int) -> _Conversation:
        with self._lock:
            state = self._conversations.get(connection_id)
            if state is None:
                row = store_read.connection(self.db.get(), connection_id)
                state = self._conversations[connection_id] = _Conversation(
                    Transcript(row.protocol_version)
                )
            return state

    def _apply(
        self,
        state: _Conversation,
        connection_id: int,
        budget_s: float | None,
        background: bool = False,
    ) -> bool:
        """Apply the frames not applied yet (for at most ``budget_s``); True: all applied.
        ``background``: each step waits while a quick read is on its way."""
        db = self.db.get()
        deadline = None if budget_s is None else time.monotonic() + budget_s
        while True:
            if background:
                self.turns.background_turn()
            count = 0
            for frame in store_read.frames(
                db, connection_id, after_seq=state.applied_seq, limit=TRANSCRIPT_STEP
            ):
                state.transcript.apply(frame)
                state.applied_seq = frame.seq
                count += 1
            if count < TRANSCRIPT_STEP:
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False

    def transcript(self, connection_id: int) -> Any:
        """The transcript model's view, applied up to the newest frame."""
        state = self._conversation(connection_id)
        with state.lock:
            self._apply(state, connection_id, None)
            return self._view(state)

    def transcript_so_far(self, connection_id: int) -> tuple[Any, bool]:
        """The transcript model's view as far as it is read after at most
        ``TRANSCRIPT_BUDGET_S`` more of reading, and whether every frame committed so far is
        in (the rest is read in the background, as for the conversation)."""
        state = self._conversation(connection_id)
        with state.lock:
            complete = self._apply(state, connection_id, TRANSCRIPT_BUDGET_S)
            view = self._view(state)
        if not complete:
            self._finish_transcript(connection_id)
        return view, complete

    def _view(self, state: _Conversation) -> Any:
        if state.view is None or state.view[0] != state.applied_seq:
            state.view = (state.applied_seq, state.transcript.view())
        return state.view[1]

    def conversation_page(
        self, connection_id: int, offset: int, limit: int, build: Any
    ) -> dict[str, Any]:
        """Entries ``[offset, offset + limit)`` of the conversation, as far as it is read.

        A long recording is read for at most ``TRANSCRIPT_BUDGET_S`` per call and then on in
        the background, so the first entries show at once; ``complete`` says whether every
        frame committed so far is in. ``build(view)`` turns a view into the list of entries
        (computed once per state of the transcript, however many pages are asked).
        """
        state = self._conversation(connection_id)
        with state.lock:
            complete = self._apply(state, connection_id, TRANSCRIPT_BUDGET_S)
            built = state.built
            # While the reading goes on, entries built from an earlier part serve the pages
            # they cover (the page says "reading"); each build costs the whole list.
            if built is None or (
                built[0] != state.applied_seq and (complete or offset + limit > len(built[2]))
            ):
                built = state.built = (state.applied_seq, *build(self._view(state)))
            _, head, entries = built
            applied = state.applied_seq
        if not complete:
            self._finish_transcript(connection_id)
        return {**head, "entries": entries[offset : offset + limit], "total": len(entries),
                "offset": offset, "complete": complete, "applied_seq": applied}  # fmt: skip

    def _finish_transcript(self, connection_id: int) -> None:
        with self._lock:
            if connection_id in self._reading:
                return
            self._reading.add(connection_id)

        def run() -> None:
            lower_priority()
            try:
                state = self._conversation(connection_id)
                while True:
                    with state.lock:
                        if self._apply(state, connection_id, TRANSCRIPT_BUDGET_S, True):
                            return
                    time.sleep(YIELD_S)
            finally:
                with self._lock:
                    self._reading.discard(connection_id)

        threading.Thread(target=run, name=f"acp-proxy-ui-read-{connection_id}", daemon=True).start()
