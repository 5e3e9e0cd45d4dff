"""The inspector's routes: the page, its assets, the JSON endpoints and the event stream.

Rules:
- Every route reads; database work runs in worker threads, so a slow query never holds up
  the event stream of another page. The short reads a screen waits for first (a connection's
  row, the first rows of a timeline, a frame, its place) take turns on one thread of their own
  (``QUICK``): run at once beside each other, their threads passed the interpreter back and
  forth at every row SQLite stepped, and on a busy machine each of them took many times its
  own time. Everything else (scans, checks, the transcript, the diff) runs beside them, and
  the inspector's background work waits while a quick read is on its way (turns.py).
- Findings are read from the checker's file: those of a range of frames (``first``,
  ``last``: the frames a page shows), or paged in the order found (``since``, at most
  ``FINDINGS_PAGE``), passed on as the checker wrote them; a frame's detail carries its own.
- The page names its script and stylesheet with their version (``?v=`` a hash of the file):
  a browser keeps that URL's answer for good, so a new tab does not fetch them again; the page
  itself, and a file asked for without its version, are asked again each time.
- Answers are JSON (orjson); recorded strings are passed on as strings, bytes as text
  ``segments`` (present.py). A frame's exact bytes are also served as a download.
- Bad parameters are 400 with one line; an unknown connection or frame is 404.
- The app is built by ``create_app`` around an ``Inspector``; ``security.Gate`` wraps it.
- The page's own files (``static/``) are read once when the app is built and served from
  memory; nothing outside that folder is ever served. The hashes of the page's inline
  scripts are the app's ``state.script_hashes``: the security policy allows those and no other.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from acp_proxy import __version__
from acp_proxy.errors import AcpProxyError, UnknownRecording
from acp_proxy.inspect.render import words
from acp_proxy.protocol.decode import json_or_none
from acp_proxy.serve.ui import events, present
from acp_proxy.serve.ui import sequence as sequence_fold
from acp_proxy.serve.ui.bundle import bundle
from acp_proxy.serve.ui.rows import chunk_key
from acp_proxy.serve.ui.state import FINDINGS_PAGE, Inspector
from acp_proxy.store import readers as store_read
from acp_proxy.store import ui_reads
from acp_proxy.store.readers import FrameFilter
from acp_proxy.store.remote import carriers

STATIC = Path(__file__).parent / "static"
MAX_LIMIT = 2000
TREE_BYTES = 4 * 1024 * 1024
SHOWN_BYTES = 1024 * 1024
DIFF_ITEMS = 5000
FIELD_CHANGES = 50
CONVERSATION_PAGE = 500
LOCATE_BUDGET_S = 0.08
SHARED_ANSWERS = 256
SEQUENCE_PAGE = 2000
WATERFALL_CALLS = 2000
SEQUENCE_SCAN = 50_000
QUICK = "quick"  # the lane of the short reads a screen waits for (see the rules)


class Json(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS, default=str)


SQLITE_MAX_INTEGER = 2**63 - 1


def _path_id(request: Request, name: str) -> int:
    """An id from the path: one past what SQLite holds (64 bits) names nothing (404)."""
    value: int = request.path_params[name]
    if value > SQLITE_MAX_INTEGER:
        raise HTTPException(404, f"no such {'connection' if name == 'cid' else 'frame'}")
    return value


def _int(request: Request, name: str, default: int, low: int = 0, high: int = 2**62) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise HTTPException(400, f"{name} must be an integer") from None
    return max(low, min(high, number))


def _filter(request: Request) -> FrameFilter:
    q = request.query_params
    direction = q.get("direction") or None
    if direction is not None and direction not in store_read.DIRECTIONS:
        raise HTTPException(400, "direction must be c2a, a2c or stderr")
    return FrameFilter(
        direction=direction, kind=q.get("kind") or None, method=q.get("method") or None,
        session=q.get("session") or None, text=q.get("text") or None,
    )  # fmt: skip


def create_app(inspector: Inspector, initial: dict[str, Any] | None = None) -> Starlette:
    """The web app for one database; ``initial`` says what the page opens on."""

    quick = anyio.CapacityLimiter(1)

    async def threaded(function: Callable[..., Any], *args: Any, lane: str = "") -> Any:
        try:
            if lane == QUICK:
                with inspector.turns.quick():
                    return await anyio.to_thread.run_sync(partial(function, *args), limiter=quick)
            return await run_in_threadpool(function, *args)
        except UnknownRecording as error:
            raise HTTPException(404, str(error)) from None
        except AcpProxyError as error:
            raise HTTPException(500, str(error)) from None

    shared: dict[tuple[Any, ...], tuple[int, asyncio.Future[bytes]]] = {}

    async def once_per_change(
        key: tuple[Any, ...],
        compute: Callable[[], Any],
        lasting: Callable[[Any], bool] = lambda _: True,
        lane: str = "",
    ) -> Response:
        """The answer for ``key``, computed once per change the event streams' watcher saw
        (however many pages ask at once); without open streams, computed every time. An
        answer that is not ``lasting`` (a timeline index still growing call by call) goes to
        those who asked at the same time only."""  # fmt: skip
        generation = events.watch_of(inspector).generation()
        if generation is None:
            return Json(await threaded(compute, lane=lane))
        found = shared.get(key)
        if found is None or found[0] != generation:
            future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            shared[key] = (generation, future)
            if len(shared) > SHARED_ANSWERS:
                del shared[next(iter(shared))]
            try:
                value = await threaded(compute, lane=lane)
                future.set_result(bytes(Json(value).body))
                if not lasting(value):
                    shared.pop(key, None)
            except BaseException as error:
                future.set_exception(error)
                future.exception()  # said to this caller; others who wait are told as well
                shared.pop(key, None)
                raise
            found = shared.get(key, (generation, future))
        body = await asyncio.shield(found[1])
        return Response(body, media_type=Json.media_type)

    def connection_id(request: Request) -> int:
        return _path_id(request, "cid")

    assets = _assets()

    versions = {name: version(body) for name, (body, _) in assets.items()}

    async def index(_: Request) -> Response:
        body, media_type = assets["index.html"]
        return Response(body, media_type=media_type, headers={"cache-control": "no-cache"})

    async def static(request: Request) -> Response:
        name = request.path_params["path"]
        found = assets.get(name)
        if found is None:
            raise HTTPException(404, "no such file")
        # The page names each file with its version: that URL's answer never changes.
        lasting = request.query_params.get("v") == versions[name]
        cache = "private, max-age=31536000, immutable" if lasting else "no-cache"
        return Response(found[0], media_type=found[1], headers={"cache-control": cache})

    async def info(_: Request) -> Response:
        return Json({
            "version": __version__, "db": str(inspector.db.path),
            "schemas": inspector.schemas is not None, "initial": initial or {},
        })  # fmt: skip

    async def connections(_: Request) -> Response:
        def read() -> dict[str, Any]:
            found = inspector.overviews()
            last = ui_reads.max_frame_id(inspector.db.get())
            return {"connections": found, "last_frame_id": last}

        return await once_per_change(("connections",), read)

    async def connection(request: Request) -> Response:
        found = await threaded(inspector.head, connection_id(request), lane=QUICK)
        if found is None:
            raise HTTPException(404, "no such connection")
        return Json(found)

    async def rows(request: Request) -> Response:
        cid, where = connection_id(request), _filter(request)
        offset = _int(request, "offset", 0)
        limit = _int(request, "limit", 100, 0, MAX_LIMIT)
        scan = request.query_params.get("scan") == "1"
        start = _int(request, "from", 0)

        def read() -> dict[str, Any]:
            # Asked in the same turn as the rows: a screen's first rows take one turn of the lane.
            if not inspector.exists(cid):
                raise HTTPException(404, "no such connection")
            return inspector.rows(cid, where, offset, limit, scan, start)

        if scan:
            return Json(await threaded(read))
        key = ("rows", cid, where.key(), offset, limit, start)
        return await once_per_change(
            key, read, lambda answer: bool(answer["caught_up"]),
            QUICK if offset == 0 else "",  # a screen's first rows; a live tail's beside them
        )  # fmt: skip

    async def locate(request: Request) -> Response:
        cid, where = connection_id(request), _filter(request)
        seq, start = _int(request, "seq", 1), _int(request, "from", 0)
        budget = LOCATE_BUDGET_S if request.query_params.get("quick") == "1" else None
        await _exists(cid)
        lane = QUICK if budget is not None else ""
        return Json(await threaded(inspector.locate, cid, where, seq, start, budget, lane=lane))

    async def run_frames(request: Request) -> Response:
        cid, where = connection_id(request), _filter(request)
        first, last = _int(request, "first", 1), _int(request, "last", 2**62)
        offset, limit = _int(request, "offset", 0), _int(request, "limit", 100, 0, MAX_LIMIT)

        def read() -> list[dict[str, Any]]:
            db = inspector.db.get()
            found = ui_reads.frames_between(db, cid, where, first, last, limit, offset)
            return [present.frame_summary(f) for f in found]

        return Json({"frames": await threaded(read)})

    async def detail(request: Request) -> Response:
        cid, seq = connection_id(request), _path_id(request, "seq")
        found = await threaded(_detail, inspector, cid, seq, lane=QUICK)
        if found is None:
            raise HTTPException(404, "no such frame")
        return Json(found)

    async def raw(request: Request) -> Response:
        cid, seq = connection_id(request), _path_id(request, "seq")
        found = await threaded(lambda: ui_reads.frame(inspector.db.get(), cid, seq))
        if found is None:
            raise HTTPException(404, "no such frame")
        disposition = f'attachment; filename="connection-{cid}-frame-{seq}.bin"'
        return Response(found["raw"], media_type="application/octet-stream",
                        headers={"content-disposition": disposition})  # fmt: skip

    async def findings(request: Request) -> Response:
        """Findings so far: of frames ``first`` to ``last``, or a page of them from ``since``
        on; the first call starts the check."""
        cid, since = connection_id(request), _int(request, "since", 0)
        limit = _int(request, "limit", FINDINGS_PAGE, 0, FINDINGS_PAGE)
        frames = None
        if "first" in request.query_params or "last" in request.query_params:
            frames = (_int(request, "first", 0), _int(request, "last", 2**62))
        await _exists(cid)
        inspector.start_checking(cid)
        return Json(await threaded(inspector.findings, cid, since, limit, frames))

    async def sessions(request: Request) -> Response:
        cid = connection_id(request)
        await _exists(cid)
        return Json(await threaded(lambda: ui_reads.sessions(inspector.db.get(), cid)))

    async def sequence(request: Request) -> Response:
        cid = connection_id(request)
        after, limit = _int(request, "after", 0), _int(request, "limit", 400, 1, MAX_LIMIT)
        key = request.query_params.get("run") or None
        await _exists(cid)
        return Json(await threaded(_sequence, inspector, cid, after, limit, key))

    async def conversation(request: Request) -> Response:
        cid = connection_id(request)
        offset = _int(request, "offset", 0)
        limit = _int(request, "limit", CONVERSATION_PAGE, 0, 10 * CONVERSATION_PAGE)
        await _exists(cid)
        return Json(await threaded(_conversation, inspector, cid, offset, limit))

    async def latency(request: Request) -> Response:
        cid = connection_id(request)
        await _exists(cid)
        return Json(await threaded(_latency, inspector, cid))

    async def session_info(request: Request) -> Response:
        cid = connection_id(request)
        await _exists(cid)
        return Json(await threaded(_session_info, inspector, cid))

    async def performance(request: Request) -> Response:
        cid = connection_id(request)
        await _exists(cid)
        return Json(await threaded(_performance, inspector, cid))

    async def diff(request: Request) -> Response:
        q = request.query_params
        a, b = q.get("a"), q.get("b")
        if not a or not b:
            raise HTTPException(400, "diff needs two recordings: a and b")
        ignore = q.getlist("ignore")
        strict = q.get("strict") in ("1", "true", "yes")
        try:
            from acp_proxy.check.scope_diff import check_ignore

            check_ignore(ignore)
        except ValueError as error:
            raise HTTPException(400, str(error)) from None
        return Json(await threaded(_diff, inspector, a, b, strict, ignore))

    async def stream(request: Request) -> Response:
        cid = request.query_params.get("connection")
        resume = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        try:
            after = int(resume)
            target = int(cid) if cid else None
        except ValueError:
            raise HTTPException(400, "connection and after must be integers") from None
        frames = request.query_params.get("frames", "1") != "0"
        return StreamingResponse(
            events.stream(inspector, target, after, frames), media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )  # fmt: skip

    async def _exists(cid: int) -> None:
        if not await threaded(inspector.exists, cid, lane=QUICK):
            raise HTTPException(404, "no such connection")

    async def not_found(request: Request, error: Exception) -> Response:
        status = error.status_code if isinstance(error, HTTPException) else 500
        detail = error.detail if isinstance(error, HTTPException) else "internal error"
        if request.url.path.startswith(f"{request.scope.get('root_path', '')}/api/"):
            return Json({"error": detail}, status_code=status)
        return Response(f"{detail}\n", status_code=status, media_type="text/plain")

    c = "/api/connections/{cid:int}"
    routes = [
        Route("/", index),
        Route("/api/info", info),
        Route("/api/connections", connections),
        Route(c, connection),
        Route(f"{c}/rows", rows),
        Route(f"{c}/locate", locate),
        Route(f"{c}/frames", run_frames),
        Route(c + "/frames/{seq:int}", detail),
        Route(c + "/frames/{seq:int}/raw", raw),
        Route(f"{c}/findings", findings),
        Route(f"{c}/sessions", sessions),
        Route(f"{c}/sequence", sequence),
        Route(f"{c}/conversation", conversation),
        Route(f"{c}/latency", latency),
        Route(f"{c}/performance", performance),
        Route(f"{c}/info", session_info),
        Route("/api/diff", diff),
        Route("/api/events", stream),
        Route("/static/{path:path}", static),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found})
    app.state.script_hashes = inline_script_hashes(assets["index.html"][0])
    return app


# --------------------------------------------------------------------------- builders

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8"}  # fmt: skip


PAGE_SCRIPT = "page.js"
ENTRY_MODULE = "app.js"


def _assets() -> dict[str, tuple[bytes, str]]:
    """The page's files (package data, a few kilobytes), read once and served from memory,
    with ``page.js``: the entry module and every module it imports as one script."""
    found = {}
    for path in STATIC.rglob("*"):
        if path.is_file() and path.suffix in _TYPES:
            found[path.relative_to(STATIC).as_posix()] = (path.read_bytes(), _TYPES[path.suffix])
    modules = {name: body.decode() for name, (body, _) in found.items() if name.endswith(".js")}
    found[PAGE_SCRIPT] = (bundle(modules, ENTRY_MODULE).encode(), _TYPES[".js"])
    page, media_type = found["index.html"]
    found["index.html"] = (_versioned(page, found), media_type)
    return found


def version(body: bytes) -> str:
    """A file's version, as the page names it (``static/page.js?v=VERSION``)."""
    return hashlib.sha256(body).hexdigest()[:16]


_STATIC_REF = re.compile(rb'(href|src)="static/([^"?]+)"')


def _versioned(page: bytes, assets: dict[str, tuple[bytes, str]]) -> bytes:
    """The page with each of its files named with its version, so that a browser keeps them
    for as long as this server serves them (a new tab opens without asking for them again)."""

    def named(found: re.Match[bytes]) -> bytes:
        name = found.group(2).decode()
        if name not in assets:
            raise ValueError(f"index.html names static/{name}, which is not there")
        return b'%s="static/%s?v=%s"' % (
            found.group(1),
            found.group(2),
            version(assets[name][0]).encode(),
        )

    return _STATIC_REF.sub(named, page)


_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)


def inline_script_hashes(html: bytes) -> list[str]:
    """``sha256-...`` of each inline script of a page, as a Content-Security-Policy names it."""
    return [
        "sha256-" + base64.b64encode(hashlib.sha256(found).digest()).decode()
        for found in _INLINE_SCRIPT.findall(html)
    ]


def _detail(inspector: Inspector, cid: int, seq: int) -> dict[str, Any] | None:
    db = inspector.db.get()
    found = ui_reads.frame(db, cid, seq)
    if found is None:
        return None
    raw: bytes = found.pop("raw")
    shown = raw[:SHOWN_BYTES]
    value: Any = None
    if found["direction"] != "stderr" and len(raw) <= TREE_BYTES:
        value = json_or_none(raw)
    out: dict[str, Any] = {
        "frame": present.frame_summary(found), "segments": present.segments(shown),
        "truncated": len(raw) - len(shown), "json": value,
    }  # fmt: skip
    carrier = carriers(db, cid, seq, seq).get(seq)  # a remote frame: which stream carried it
    if carrier is not None:
        out["carrier"] = {
            "stream": carrier.stream, "exchange": carrier.exchange, "status": carrier.status,
            "text": words.carrier_words(carrier),
        }  # fmt: skip
    if found["kind"] == "request":
        answer = inspector.answer(cid, seq)
        if answer is not None:
            out["pair"] = present.frame_summary(answer)
            out["latency_ns"] = answer["mono_ns"] - found["mono_ns"]
    elif found.get("request_seq") is not None:
        request = ui_reads.summary(db, cid, found["request_seq"])
        if request is not None:
            out["pair"] = present.frame_summary(request)
            out["latency_ns"] = found["mono_ns"] - request["mono_ns"]
    out["descriptions"] = []
    if inspector.documents is not None and value is not None and found["method"]:
        from acp_proxy.check.schema_docs import describe

        role = {"request": "request", "notification": "notification", "response": "response",
                "error": "response"}.get(found["kind"])  # fmt: skip
        if role is not None and found["kind"] != "error":
            version = store_read.connection(db, cid).protocol_version
            out["descriptions"] = describe(
                inspector.documents, version, role, found["method"], found["update_kind"], value
            )
    out["findings"], out["stored_findings"] = inspector.frame_findings(cid, seq)
    out["checked"] = inspector.check_progress(cid)  # the findings are all there once past seq
    out["schemas"] = inspector.documents is not None
    return out


def _sequence(
    inspector: Inspector, cid: int, after: int, limit: int, key: str | None
) -> dict[str, Any]:
    """Up to ``limit`` arrows after frame ``after``, runs folded; ``run`` is the run the
    previous page ended in. ``end``: every frame committed so far was read."""
    db = inspector.db.get()
    arrows: list[dict[str, Any]] = []
    scanned, end = 0, False
    while len(arrows) <= limit and scanned < SEQUENCE_SCAN:
        found = ui_reads.protocol_frames(db, cid, after, SEQUENCE_PAGE)
        got, key = sequence_fold.fold(found, key)
        if got and got[0].get("continues") and arrows:
            head = got.pop(0)
            arrows[-1]["count"] += head["count"]
            arrows[-1]["last_seq"] = head["last_seq"]
        arrows += got
        scanned += len(found)
        if found:
            after = found[-1]["seq"]
        if len(found) < SEQUENCE_PAGE:
            end = True
            break
    if len(arrows) > limit:
        arrows = arrows[:limit]
        last = arrows[-1]
        after, end = last["last_seq"], False
        key = chunk_key(last["direction"], last["session_id"], last["update_kind"],
                        last["message_id"])  # fmt: skip
    return {
        "messages": [present.frame_summary(a) for a in arrows],
        "after": after, "run": key, "end": end,
    }  # fmt: skip


def _conversation_entries(view: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The conversation as one list of entries: events, then each session's heading and items."""
    entries = [present.item_data(e, ()) for e in view.events]
    for session in view.sessions:
        entries.append({
            "type": "Session", "session_id": session.session_id,
            "opened_by": session.opened_by, "state": session.state, "mode": session.mode,
            "usage": words.usage_text(session.usage) if session.usage else None,
        })  # fmt: skip
        entries += [present.item_data(i, session.turns) for i in session.timeline]
    head = {
        "protocol_version": view.protocol_version,
        "agent": words.peer(view.agent_info),
        "client": words.peer(view.client_info),
        "frames": view.frames,
    }  # fmt: skip
    return head, entries


def _conversation(inspector: Inspector, cid: int, offset: int, limit: int) -> dict[str, Any]:
    return inspector.conversation_page(cid, offset, limit, _conversation_entries)


def _latency(inspector: Inspector, cid: int) -> dict[str, Any]:
    from acp_proxy.inspect.render.text import turn_record
    from acp_proxy.protocol.latency import by_method

    db = inspector.db.get()
    methods = [m.as_record() for m in by_method(store_read.calls(db, cid))]
    # The turns need the transcript of every frame: a long recording's is read on in the
    # background, and the page asks again while ``turns_complete`` is false.
    view, complete = inspector.transcript_so_far(cid)
    turns = [turn_record(t) for s in view.sessions for t in s.turns]
    return {"methods": methods, "turns": turns, "turns_complete": complete}


def _session_info(inspector: Inspector, cid: int) -> dict[str, Any]:
    from acp_proxy.serve.ui import session_info

    db = inspector.db.get()
    methods = ("initialize", *session_info.SESSION_METHODS)
    exchanges = ui_reads.requests_with_answers(db, cid, methods, session_info.SESSIONS_SHOWN + 1)
    sessions = list(inspector.transcript(cid).sessions)
    return session_info.build(exchanges, sessions, ui_reads.extension_methods(db, cid))


def _performance(inspector: Inspector, cid: int) -> dict[str, Any]:
    """Latency tables, insights from complete pairs, and the first calls for the waterfall."""
    from acp_proxy.protocol.insights import Span, insights

    db = inspector.db.get()
    live = store_read.status(db, cid) == "running"
    out = _latency(inspector, cid)
    spans = [Span(seq, method or "", direction, start, latency, bool(error))
             for seq, method, direction, start, latency, error, _ in
             ui_reads.call_spans(db, cid, 2**62)]  # fmt: skip
    out["insights"] = insights(spans)
    shown = ui_reads.call_spans(db, cid, WATERFALL_CALLS)
    out["calls"] = [
        {"seq": seq, "method": method, "direction": direction, "start_ns": start,
         "latency_ns": latency, "error": bool(error), "answer_seq": answer}
        for seq, method, direction, start, latency, error, answer in shown
    ]  # fmt: skip
    out["calls_total"] = len(spans)
    out["live"] = live
    head = ui_reads.connection_head(db, cid)
    out["first_mono_ns"] = head["first_mono_ns"] if head else None
    out["last_mono_ns"] = head["last_mono_ns"] if head else None
    return out


def _diff(inspector: Inspector, a: str, b: str, strict: bool, ignore: list[str]) -> dict[str, Any]:
    from acp_proxy.check.scope_diff import diff_scopes
    from acp_proxy.protocol.alignment import align, changes, present
    from acp_proxy.protocol.diffing import DIRECTIONS
    from acp_proxy.store.frames import scope

    db = inspector.db.get()
    targets = [scope(db, ref, sessions=True) for ref in (a, b)]
    names = [
        {"ref": ref, "connection_id": target.connection_id, "session_id": target.session_id,
         "label": target.label}
        for ref, target in zip((a, b), targets, strict=True)
    ]  # fmt: skip
    compared = diff_scopes((db, targets[0]), (db, targets[1]), strict=strict, ignore=ignore)
    result, sides = compared.diff, (compared.a, compared.b)

    def shown(item: Any) -> Any:
        if item is None:
            return None
        text = item.text if item.value is None else words.to_json(item.value, pretty=True)
        return {"seq": item.seq, "index": item.index, "text": text}

    directions = {}
    for direction in DIRECTIONS:
        left, right = sides[0][direction], sides[1][direction]
        pairs = []
        aligned = align([x.text for x in left[:DIFF_ITEMS]], [y.text for y in right[:DIFF_ITEMS]])
        for i, j in aligned:
            x = left[i] if i is not None else None
            y = right[j] if j is not None else None
            same = x is not None and y is not None and x.text == y.text
            pair: dict[str, Any] = {"a": shown(x), "b": shown(y), "same": same}
            if not same and x is not None and y is not None and x.value is not None:
                pair["changes"] = [
                    {"path": path, "a": words.to_json(u) if present(u) else None,
                     "b": words.to_json(v) if present(v) else None}
                    for path, u, v in changes(x.value, y.value, FIELD_CHANGES)
                ]  # fmt: skip
            pairs.append(pair)
        directions[direction] = pairs
    ids = [int(str(n["connection_id"])) for n in names]
    metadata = _metadata_diff(inspector, ids)
    latency = _latency_deltas(db, ids)
    divergence = None
    if result.divergence is not None:
        d = result.divergence
        divergence = {
            "direction": d.direction, "index": d.index, "path": d.path,
            "a_seq": d.a.seq if d.a else None, "b_seq": d.b.seq if d.b else None,
        }  # fmt: skip
    return {
        "sides": names, "equal": result.equal, "counts": result.counts,
        "divergence": divergence, "directions": directions,
        "metadata": metadata, "latency": latency,
    }  # fmt: skip


def _metadata_diff(inspector: Inspector, ids: list[int]) -> list[dict[str, Any]]:
    """Versions, negotiated protocol and capabilities of both sides, row by row."""
    infos = [_session_info(inspector, cid) for cid in ids]
    rows: list[dict[str, Any]] = []

    def add(name: str, a: Any, b: Any) -> None:
        x, y = words.to_json(a), words.to_json(b)
        rows.append({"field": name, "a": x, "b": y, "same": x == y})

    for side in ("agent", "client"):
        add(f"{side} info", infos[0][side]["info"], infos[1][side]["info"])
        add(f"{side} protocol version", infos[0][side]["protocol_version"],
            infos[1][side]["protocol_version"])  # fmt: skip
    add("negotiated protocol version", infos[0]["negotiated_version"],
        infos[1]["negotiated_version"])  # fmt: skip
    for side, column in (("client", 1), ("agent", 2)):
        left = {row[0]: row[column] for row in infos[0]["capabilities"]}
        right = {row[0]: row[column] for row in infos[1]["capabilities"]}
        for path in list(left) + [p for p in right if p not in left]:
            add(f"{side} capability {path}", left.get(path), right.get(path))
    return rows


def _latency_deltas(db: Any, ids: list[int]) -> list[dict[str, Any]]:
    """Per method and direction: count, p50, p95 and p99 in A and B (``protocol.latency``)."""
    from acp_proxy.protocol.latency import by_method

    tables = [{(m.method, m.direction): m for m in by_method(store_read.calls(db, cid))}
              for cid in ids]  # fmt: skip
    keys = sorted(set(tables[0]) | set(tables[1]))
    rows = []
    for key in keys:
        a, b = tables[0].get(key), tables[1].get(key)
        row: dict[str, Any] = {"method": key[0], "direction": key[1]}
        for name, side in (("a", a), ("b", b)):
            row[f"{name}_count"] = side.count if side else 0
            row[f"{name}_p50_ns"] = side.p50_ns if side else None
            row[f"{name}_p95_ns"] = side.p95_ns if side else None
            row[f"{name}_p99_ns"] = side.p99_ns if side else None
        rows.append(row)
    return rows
