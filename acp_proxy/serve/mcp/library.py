"""What the MCP tools do, without MCP: recordings in, JSON-ready dicts out.

Rules:
- Read-only: nothing here writes a recording (the search index's catch-up aside, which only
  adds to the index). Every connection is read through ``Copies`` (redacted unless the server
  was told not to), and named by its id in the source database.
- The same code as the commands: frames as ``show --json`` writes them, findings as
  ``check --format json``, divergences as ``diff --format json``, latency from
  ``protocol.latency`` (nearest-rank percentiles), transcripts as ``export --format markdown``.
- Every result is verified before it leaves (``verified``: the redaction detectors run
  afresh on it); one that still holds something secret-looking is withheld.
- Every result fits in ``max_bytes`` of JSON (bounds.py): lists are paged (a ``next`` value to
  pass back as the cursor), long texts are cut (an ``offset`` to continue at).
- A mistake of the caller (an unknown REF, a bad pattern or rule) is a ``ToolMistake`` with a
  sentence saying what to do instead.
- One tool at a time reads the shared connections (``lock``); a search scans the recordings
  on a connection of its own (``scanner``) without it, so a long search never keeps the
  other tools waiting. Regular expressions are RE2's (linear time, store/search.py).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from acp_proxy.errors import AcpProxyError
from acp_proxy.inspect.render.hits import hit_record
from acp_proxy.inspect.render.text import frame_json
from acp_proxy.inspect.render.words import wall
from acp_proxy.inspect.since import since_ns
from acp_proxy.plural import counted, noun
from acp_proxy.protocol.decode import column_value, json_object
from acp_proxy.protocol.latency import by_method
from acp_proxy.serve.mcp.bounds import cut_text, fit_items, shrink_value, size
from acp_proxy.serve.mcp.copies import Copies
from acp_proxy.store import readers as store_read
from acp_proxy.store.refs import Scope, connection_scope, resolve_ref, scope
from acp_proxy.store.search import SearchQuery, catch_up, compile_pattern, index_state
from acp_proxy.store.search import search as run_search
from acp_proxy.store.values import Hit

MAX_PAGE = 200
SEARCH_SCAN = 2000  # source hits looked at per call when redacting (a redacted hit may vanish)


class ToolMistake(Exception):
    """The caller asked for something that cannot be given; the message says why."""


def _json(text: str) -> Any:
    return orjson.loads(text)


def _cursor(item: dict[str, Any]) -> str:
    return str(item["cursor"])


def _cursor_key(cursor: str) -> tuple[int, int]:
    """``(started_ns, id)`` of a ``list_recordings`` cursor (``STARTED_NS:ID``)."""
    started, _, connection_id = cursor.partition(":")
    try:
        return int(started), int(connection_id)
    except ValueError:
        raise ToolMistake(
            f"before={cursor!r} is not a cursor: pass the next value of list_recordings"
        ) from None


class Library:
    """The recordings of one database, as the MCP tools see them."""

    def __init__(
        self, copies: Copies, max_bytes: int, *, writable: bool,
        scanner: Callable[[], store_read.Database] | None = None,
    ) -> None:  # fmt: skip
        self.copies = copies
        self.lock = threading.Lock()  # one tool at a time on the shared connections
        self._scanner = scanner  # a connection of its own for a search's scan
        self.source = copies.source
        self.max_bytes = max_bytes
        self._writable = writable
        self._indexed = False

    # --- helpers -------------------------------------------------------------------------

    def _id(self, ref: str | int | None) -> int:
        try:
            return resolve_ref(self.source, None if ref is None else str(ref))
        except AcpProxyError as error:
            raise ToolMistake(f"{error}; list_recordings shows the ids") from error

    def _limit(self, limit: int) -> int:
        return max(1, min(int(limit), MAX_PAGE))

    def _peer(self, info: Any) -> dict[str, Any] | None:
        if not isinstance(info, dict):
            return None
        return {k: info.get(k) for k in ("name", "title", "version") if k in info}

    def verified(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` if nothing in it looks secret; else a ``ToolMistake`` (never the secret)."""
        leaks = self.copies.leaks(result)
        if leaks:
            where = ", ".join(sorted({f"{leak.kind} at {leak.where}" for leak in leaks})[:3])
            raise ToolMistake(
                f"result withheld: {counted(len(leaks), 'thing')} in it still "
                f"{noun(len(leaks), 'looks', 'look')} secret ({where}); "
                "ask for less (a narrower filter, another page) and report this as a bug"
            )
        return result

    # --- list_recordings -----------------------------------------------------------------

    def list_recordings(
        self, since: str | None = None, label: str | None = None, agent: str | None = None,
        status: str | None = None, limit: int = 20, before: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Recordings newest first (the latest start first, as ``ls`` lists them last),
        filtered; ``before`` (a ``next``) pages to older ones.

        The cursor is the last listed recording's start and id, not its id alone: ids and starts
        need not agree (an import keeps the start it had), and the cursor must still say where
        a page ended when that recording has been deleted since. So paging neither skips nor
        repeats a recording while others are added or deleted: each recording that exists
        from the first page to the last, and matches, is listed exactly once, in ``ls``'s order.
        """
        after_key = None if before is None else _cursor_key(before)
        started = None
        if since is not None:
            try:
                started = since_ns(since, time.time_ns())
            except ValueError as error:
                raise ToolMistake(str(error)) from error
        limit = self._limit(limit)
        items: list[dict[str, Any]] = []
        more = False
        for row in reversed(store_read.connections(self.source, None)):
            if after_key is not None and (row.started_ns, row.id) >= after_key:
                continue
            if started is not None and row.started_ns < started:
                continue
            if status is not None and row.status != status:
                continue
            record = self.copies.connection_record(row.id)
            agent_info = column_value(record.get("agent_info"))
            if label is not None and label.lower() not in str(record.get("label") or "").lower():
                continue
            if agent is not None and agent.lower() not in orjson.dumps(agent_info).decode().lower():
                continue
            if len(items) == limit:
                more = True
                break
            counts = store_read.counts(self.source, row.id)
            ended = row.ended_ns - row.started_ns if row.ended_ns is not None else None
            items.append({
                "id": row.id, "cursor": f"{row.started_ns}:{row.id}",
                "label": record.get("label"), "started": wall(row.started_ns),
                "duration_ms": None if ended is None else ended / 1e6, "status": row.status,
                "ending": row.ending, "agent": self._peer(agent_info),
                "client": self._peer(column_value(record.get("client_info"))),
                "protocol_version": row.protocol_version, "frames": counts.frames,
                "prompt_turns": counts.prompts, "error_responses": counts.errors,
                "malformed_frames": counts.malformed, "sessions": len(counts.sessions),
            })  # fmt: skip
        result = {"recordings": [], "hint": "next: pass it as before for older recordings"}
        page = fit_items(result, "recordings", items, self.max_bytes, _cursor, more=more)
        for item in page["recordings"]:
            item.pop("cursor", None)
        return page

    # --- recording_summary ---------------------------------------------------------------

    def recording_summary(self, ref: str) -> dict[str, Any]:
        """Everything about one recording at a glance, with where to look next."""
        source_id = self._id(ref)
        db, cid = self.copies.view(source_id)
        row = store_read.connection(db, cid)
        counts = store_read.counts(db, cid)
        initialize = self._initialize(db, cid)
        sessions = [{"session_id": s, "prompt_turns": p} for s, p in counts.sessions]
        turns = [
            {"session_id": t[0], "prompt_seq": t[1], "end_seq": t[2], "stop_reason": t[3],
             "status": t[4], "duration_ms": t[5]}
            for t in store_read.prompt_turns(db, cid)
        ]  # fmt: skip
        errors = [
            {"seq": f.seq, "request_seq": f.request_seq, "method": f.method,
             "error": _error_of(f.raw)}
            for f in store_read.frames(db, cid, store_read.FrameFilter(kind="error"), limit=20)
        ]  # fmt: skip
        findings = self._findings(db, cid, (), ())
        by_rule: dict[str, int] = {}
        for finding in findings["findings"]:
            by_rule[finding["rule"]] = by_rule.get(finding["rule"], 0) + 1
        summary: dict[str, Any] = {
            "id": source_id, "label": row.label, "status": row.status, "ending": row.ending,
            "started": wall(row.started_ns),
            "duration_ms": None if row.ended_ns is None else (row.ended_ns - row.started_ns) / 1e6,
            "protocol_version": row.protocol_version, "agent": row.agent_info,
            "client": row.client_info, **initialize,
            "frames": {"c2a": row.frames_c2a, "a2c": row.frames_a2c, "stderr": row.lines_stderr,
                       "lost": row.frames_lost, "malformed": counts.malformed},
            "sessions": sessions, "prompt_turns": turns, "error_responses": errors,
            "error_responses_total": counts.errors,
            "check": {"findings": len(findings["findings"]), "by_rule": by_rule,
                      "first": findings["findings"][:10], "note": findings.get("note")},
            "latency_by_method": [s.as_record() for s in by_method(store_read.calls(db, cid))],
            "next_steps": [
                "frames(ref, ...) lists frames (filter by method, kind, session, direction)",
                "frame(ref, seq) shows one frame with its request or response",
                "conversation(ref, turn) shows a prompt turn as Markdown",
                "check(ref) lists every spec finding with its fix",
            ],
        }  # fmt: skip
        return self._bounded(summary)

    def _initialize(self, db: store_read.Database, cid: int) -> dict[str, Any]:
        found = store_read.frames(
            db, cid, store_read.FrameFilter(method="initialize", kind="request"), limit=1
        )
        request = next(iter(found), None)
        if request is None:
            return {"initialize": None}
        params = (json_object(request.raw) or {}).get("params") or {}
        answer = next(
            (
                f
                for f in store_read.frames(db, cid, after_seq=request.seq)
                if f.request_seq == request.seq
            ),
            None,
        )
        result = (json_object(answer.raw) or {}).get("result") if answer is not None else None
        result = result if isinstance(result, dict) else {}
        return {
            "client_capabilities": params.get("clientCapabilities"),
            "agent_capabilities": result.get("agentCapabilities"),
            "auth_methods": result.get("authMethods"),
            "negotiated_version": result.get("protocolVersion"),
        }

    def _bounded(self, value: dict[str, Any]) -> dict[str, Any]:
        if size(value) <= self.max_bytes:
            return value
        shrunk = shrink_value(value, self.max_bytes - 200)
        assert isinstance(shrunk, dict)
        shrunk["truncated"] = True
        return shrunk

    # --- frames and frame ----------------------------------------------------------------

    def frames(
        self, ref: str, session: str | None = None, method: str | None = None,
        kind: str | None = None, direction: str | None = None, after_seq: int = 0,
        limit: int = 50,
    ) -> dict[str, Any]:  # fmt: skip
        """Frames as ``show --json`` has them, paged by ``after_seq``."""
        source_id = self._id(ref)
        db, cid = self.copies.view(source_id)
        where = store_read.FrameFilter(session=session, method=method, kind=kind,
                                       direction=direction)  # fmt: skip
        first = store_read.first_mono_ns(db, cid)
        limit = self._limit(limit)
        rows = list(store_read.frames(db, cid, where, after_seq=after_seq, limit=limit + 1))
        more = len(rows) > limit
        items = [_json(frame_json(f, first)) for f in rows[:limit]]
        return fit_items(
            {"id": source_id, "frames": [],
             "hint": "next: pass it as after_seq; frame(ref, seq) shows a frame whole"},
            "frames", items, self.max_bytes, lambda f: f["seq"], shrink=_shrink_frame, more=more,
        )  # fmt: skip

    def frame(self, ref: str, seq: int, offset: int = 0) -> dict[str, Any]:
        """One frame and the other half of its call (request or response)."""
        source_id = self._id(ref)
        db, cid = self.copies.view(source_id)
        first = store_read.first_mono_ns(db, cid)
        found = next(iter(store_read.frames(db, cid, after_seq=seq - 1, limit=1)), None)
        if found is None or found.seq != seq:
            raise ToolMistake(f"recording {source_id} has no frame {seq}")
        record = _json(frame_json(found, first))
        pair = None
        if found.request_seq is not None:
            pair = next(iter(store_read.frames(db, cid, after_seq=found.request_seq - 1,
                                               limit=1)), None)  # fmt: skip
        elif found.kind == "request":
            pair = next(
                (f for f in store_read.frames(db, cid, after_seq=seq) if f.request_seq == seq),
                None,
            )
        body = orjson.dumps(record.pop("message", record.pop("text", None))).decode()
        budget = max(self.max_bytes // 2, 1024)
        piece, next_offset = cut_text(body, offset, budget)
        record["body"] = piece
        record["body_offset"] = offset
        record["body_next_offset"] = next_offset
        result: dict[str, Any] = {"id": source_id, "frame": record, "pair": None}
        if pair is not None:
            result["pair"] = _shrink_frame(_json(frame_json(pair, first)), self.max_bytes // 3)
        return self._bounded(result)

    # --- search --------------------------------------------------------------------------

    def search(
        self, pattern: str, regex: bool = False, ignore_case: bool = False,
        refs: Sequence[str] | None = None, method: str | None = None,
        direction: str | None = None, since: str | None = None, limit: int = 20,
        after: int = 0,
    ) -> dict[str, Any]:  # fmt: skip
        """Frames matching ``pattern`` across recordings, in recorded order, paged by ``after``.

        The scan of the recordings, the long part, holds no lock when the library has a
        ``scanner``: other tools answer meanwhile. Refs, the index and the redacted copies are
        shared, so those steps take ``lock``.
        """
        try:
            since_value = None if since is None else since_ns(since, time.time_ns())
        except ValueError as error:
            raise ToolMistake(str(error)) from error
        limit = self._limit(limit)
        with self.lock:
            ids = sorted({self._id(r) for r in refs}) if refs else None
            note = self._index()
        query = SearchQuery(
            pattern, regex=regex, ignore_case=ignore_case, connections=ids, method=method,
            direction=direction, since_ns=since_value, after=after,
        )  # fmt: skip
        try:
            compile_pattern(query)
            found = self._scan(query, limit)
            with self.lock:
                hits, more, resume = self._hits(query, found, limit)
        except AcpProxyError as error:
            raise ToolMistake(str(error)) from error
        result: dict[str, Any] = {
            "hits": [],
            "hint": "next: pass it as after; frame(id, seq) shows a hit whole",
        }
        if note:
            result["note"] = note
        page = fit_items(result, "hits", hits, self.max_bytes, lambda h: h["_after"])
        for hit in page["hits"]:
            del hit["_after"]
        if page["next"] is None and more:
            page["next"] = resume
            page["truncated"] = True
        return page

    def _scan(self, query: SearchQuery, limit: int) -> list[Hit]:
        """The source's hits a page can need: ``limit`` and one more, or when redacting (a
        hit may vanish in the copy) up to ``SEARCH_SCAN``."""
        wanted = SEARCH_SCAN if self.copies.redacting else limit + 1
        scan = dataclasses.replace(query, limit=wanted)
        if self._scanner is None:
            with self.lock:
                return list(run_search(self.source, scan))
        db = self._scanner()
        try:
            return list(run_search(db, scan))
        finally:
            db.close()

    def _hits(
        self, query: SearchQuery, found: list[Hit], limit: int
    ) -> tuple[list[dict[str, Any]], bool, int]:
        """Up to ``limit`` hits of ``found`` (confirmed in the redacted copies when redacting),
        whether there are more, and where the next page starts."""
        out: list[dict[str, Any]] = []
        last = query.after
        for hit in found:
            shown = hit if not self.copies.redacting else self._confirmed(query, hit)
            if shown is not None:
                if len(out) == limit:
                    return out, True, out[-1]["_after"]
                record = hit_record(shown, hit.connection_id)
                record["_after"] = hit.frame_id
                out.append(record)
            last = hit.frame_id
        more = self.copies.redacting and len(found) >= SEARCH_SCAN
        return out, more, last

    def _confirmed(self, query: SearchQuery, hit: Any) -> Any:
        """The hit as its redacted copy has it, or None if the match was in redacted text."""
        db, cid = self.copies.searchable_view(hit.connection_id)
        again = SearchQuery(
            query.pattern, regex=query.regex, ignore_case=query.ignore_case, connections=[cid],
            after=store_read.frame_id(db, cid, hit.seq) - 1, limit=1,
        )  # fmt: skip
        found = next(iter(run_search(db, again)), None)
        if found is None or found.seq != hit.seq:
            return None
        return dataclasses.replace(found, frame_id=hit.frame_id, connection_id=hit.connection_id)

    def _index(self) -> str | None:
        if self._indexed:
            return None
        state = index_state(self.source)
        if state.pending and self._writable:
            catch_up(self.source, state)
        self._indexed = True
        if state.pending and not self._writable:
            return (
                f"{counted(state.pending, 'frame')} not indexed (read-only database): not searched"
            )
        return None

    # --- check, diff ---------------------------------------------------------------------

    def check(
        self, ref: str, select: Sequence[str] = (), ignore: Sequence[str] = (), offset: int = 0
    ) -> dict[str, Any]:
        """The spec findings of one recording, as ``check --format json``, paged by ``offset``."""
        source_id = self._id(ref)
        db, cid = self.copies.view(source_id)
        document = self._findings(db, cid, select, ignore)
        findings = document.pop("findings")
        for finding in findings:
            finding["connection_id"] = source_id
        for connection in document["connections"]:
            connection["connection_id"] = source_id
        numbered = [{"n": offset + i, **f} for i, f in enumerate(findings[offset:])]
        page = fit_items(document | {"findings": []}, "findings", numbered, self.max_bytes,
                         lambda f: f["n"] + 1)  # fmt: skip
        for finding in page["findings"]:
            finding.pop("n")
        page["total_findings"] = len(findings)
        return page

    def _findings(
        self, db: store_read.Database, cid: int, select: Sequence[str], ignore: Sequence[str]
    ) -> dict[str, Any]:
        from acp_proxy.check.engine import select_rules
        from acp_proxy.check.report import render_json
        from acp_proxy.check.schema_files import SchemasUnavailable, load_book
        from acp_proxy.check.scope_check import check_scope

        try:
            rules = select_rules(select, ignore)
        except ValueError as error:
            raise ToolMistake(str(error)) from error
        note = None
        book = None
        if "ACP000" in rules:
            try:
                book = load_book(None)
            except SchemasUnavailable as error:
                rules = frozenset(r for r in rules if r != "ACP000")
                note = f"schemas not installed, ACP000 (schema validation) not run: {error}"
        checked = [check_scope(db, connection_scope(db, cid), book, rules)]
        document: dict[str, Any] = _json(
            render_json(
                checked, sorted(rules), self.copies.redact_text(book.source) if book else None
            )
        )
        if note:
            document["note"] = note
        return document

    def diff(
        self, a: str, b: str, strict: bool = False, ignore: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The first divergence of two recordings (or sessions), as ``diff --format json``."""
        from acp_proxy.check.report import render_diff_json
        from acp_proxy.check.scope_diff import check_ignore, diff_scopes

        try:
            check_ignore(ignore)
        except ValueError as error:
            raise ToolMistake(f"ignore: {error}") from error
        sides = []
        for ref in (a, b):
            try:
                target = scope(self.source, str(ref), sessions=True)
            except AcpProxyError as error:
                raise ToolMistake(f"{error}; list_recordings shows the ids") from error
            db, cid = self.copies.view(target.connection_id)
            session = target.session_id
            if session is not None:
                session = self.copies.redact_text(session)
            sides.append((db, Scope(cid, session, target.protocol_version, target.label)))
        compared = diff_scopes(sides[0], sides[1], strict=strict, ignore=ignore)
        document = _json(render_diff_json(compared.diff))
        return self._bounded(document)

    # --- conversation, method_stats ------------------------------------------------------

    def conversation(self, ref: str, turn: int | None = None, offset: int = 0) -> dict[str, Any]:
        """The conversation as Markdown (one prompt turn, 1-based, or all), cut at ``offset``."""
        from acp_proxy.inspect.export import transcript_of
        from acp_proxy.inspect.render.markdown import render_markdown

        source_id = self._id(ref)
        db, cid = self.copies.view(source_id)
        view = transcript_of(db, cid)
        row = store_read.connection(db, cid)
        row = dataclasses.replace(row, id=source_id)
        turns = [t for s in view.sessions for t in s.turns]
        if turn is not None:
            if not 1 <= turn <= len(turns):
                raise ToolMistake(
                    f"recording {source_id} has {len(turns)} prompt turns; turn is 1 to "
                    f"{len(turns)} (or leave it out for the whole conversation)"
                )
            view = _one_turn(view, turns[turn - 1])
        text = self.copies.redact_text(render_markdown(view, row), source_id)
        piece, next_offset = cut_text(text, offset, max(self.max_bytes // 2, 1024))
        return {
            "id": source_id, "turn": turn, "turns": len(turns), "markdown": piece,
            "offset": offset, "next_offset": next_offset, "length": len(text),
        }  # fmt: skip

    def method_stats(self, ref: str) -> dict[str, Any]:
        """Per method and direction: calls, errors, p50/p95/p99/max latency (nearest rank)."""
        source_id = self._id(ref)
        db, cid = self.copies.view(source_id)
        summaries = [s.as_record() for s in by_method(store_read.calls(db, cid))]
        return self._bounded({
            "id": source_id, "methods": summaries,
            "percentiles": "nearest rank: the value at rank ceil(p/100*n) of the sorted latencies",
        })  # fmt: skip


def _one_turn(view: Any, turn: Any) -> Any:
    """The transcript narrowed to one prompt turn of one session."""
    session = view.session(turn.session_id)
    later = [t.prompt_seq for t in session.turns if t.prompt_seq > turn.prompt_seq]
    end = min(later) if later else None

    def inside(item: Any) -> bool:
        owner = getattr(item, "turn", None)
        if owner is not None and not isinstance(owner, bool):
            return bool(owner == turn.index)
        seq = getattr(item, "seq", None)
        seq = getattr(item, "first_seq", 0) if seq is None else seq
        return bool(seq >= turn.prompt_seq and (end is None or seq < end))

    narrowed = dataclasses.replace(
        session, timeline=tuple(i for i in session.timeline if inside(i)), turns=(turn,)
    )
    return dataclasses.replace(view, sessions=(narrowed,), events=())


def _error_of(raw: bytes) -> Any:
    value = json_object(raw) or {}
    error = value.get("error")
    return shrink_value(error, 1024)


def _shrink_frame(frame: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    if size(frame) <= max_bytes:
        return frame
    out = dict(frame)
    for key in ("message", "text", "raw_base64"):
        if key in out:
            out[key] = shrink_value(out[key], max(max_bytes - 600, 256))
    out["cut"] = "frame(ref, seq) shows this frame whole"
    return out
