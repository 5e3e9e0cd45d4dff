"""Sans-I/O: history replay in materialized form (``session/load``, v2 ``session/resume``).

Rules (spec: v1 session-setup, v2 draft session-setup, session-compaction RFD):
- A history window is what the recorded agent sent for one session between a client's
  ``session/load`` request (v1), or ``session/resume`` with ``replayFrom: {"type": "start"}``
  (v2 draft), and its response.
- In a window, each compaction is replayed as one ``compaction_update`` in its final state
  (terminal status, final summary and fields), at the place of its first update: the
  transient ``in_progress`` / ``compaction_summary_chunk`` / terminal sequence is folded with
  the transcript model's rules (inspect/transcript/entities.py). A compaction the recorded agent
  already sent as a single update keeps its recorded bytes.
- Everything else in a window (messages with their original ids, tool calls, unknown kinds)
  keeps its recorded bytes; notices are dropped everywhere by replay itself.
- ``materialized(frames)`` returns, per ``seq``, the bytes that replace a frame, or None for
  a frame folded into an earlier one. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from acp_proxy.protocol.acp import COMPACTION_KINDS, SESSION_LOAD, SESSION_RESUME, SESSION_UPDATE
from acp_proxy.protocol.jsonrpc import decode

if TYPE_CHECKING:
    from acp_proxy.store.replay_rows import RecordedFrame


def is_history_request(method: str | None, params: Any) -> bool:
    """Whether a client request asks the agent to replay a session's history."""
    if method == SESSION_LOAD:
        return True
    if method != SESSION_RESUME or not isinstance(params, dict):
        return False
    start = params.get("replayFrom")
    return isinstance(start, dict) and start.get("type") == "start"


def materialized(frames: Sequence[RecordedFrame]) -> dict[int, bytes | None]:
    """Replacement bytes per seq for the compactions of every history window."""
    replaced: dict[int, bytes | None] = {}
    windows: dict[int, str | None] = {}  # request seq -> session id
    for index, frame in enumerate(frames):
        if frame.direction == "c2a" and frame.kind == "request":
            if frame.method in (SESSION_LOAD, SESSION_RESUME):
                value, _ = decode(frame.raw)
                params = value.get("params") if isinstance(value, dict) else None
                if is_history_request(frame.method, params):
                    windows[frame.seq] = frame.session_id
        elif frame.direction == "a2c" and frame.request_seq in windows:
            start = windows.pop(frame.request_seq)
            session = start
            window = [
                f
                for f in frames[:index]
                if f.seq > frame.request_seq and f.direction == "a2c"
                and f.method == SESSION_UPDATE and f.update_kind in COMPACTION_KINDS
                and f.session_id == session
            ]  # fmt: skip
            replaced.update(_fold(window))
    return replaced


def _update(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    value, _ = decode(raw)
    params = value.get("params") if isinstance(value, dict) else None
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict):
        return None, None
    session = params.get("sessionId") if isinstance(params, dict) else None
    return (session if isinstance(session, str) else None), update


def _fold(window: Sequence[RecordedFrame]) -> dict[int, bytes | None]:
    # Imported here: the transcript model is only needed when a history window holds
    # compactions, and importing it is a sizeable part of replay's start-up.
    from acp_proxy.inspect.transcript.entities import (
        CHUNK_KINDS,
        Appended,
        append_chunk,
        apply,
        new_entity,
        settle,
    )
    from acp_proxy.inspect.transcript.values import Compaction

    groups: dict[str, list[tuple[RecordedFrame, dict[str, Any]]]] = {}
    sessions: dict[str, str | None] = {}
    for frame in window:
        session, update = _update(frame.raw)
        compaction_id = update.get("compactionId") if update else None
        if update is None or not isinstance(compaction_id, str):
            continue
        groups.setdefault(compaction_id, []).append((frame, update))
        sessions.setdefault(compaction_id, session)
    replaced: dict[int, bytes | None] = {}
    for compaction_id, group in groups.items():
        if len(group) == 1 and group[0][1].get("sessionUpdate") == "compaction_update":
            continue  # already materialized: keep the recorded bytes
        entity: Any = new_entity(("compaction", compaction_id), group[0][0].seq, None, "replay")
        appended = Appended()  # chunks append in place: linear in the group's frames
        for _, update in group:
            kind = str(update.get("sessionUpdate"))
            if kind in CHUNK_KINDS:
                entity = append_chunk(entity, kind, update, appended)
            else:
                entity = apply(settle(entity, appended), kind, update)
        entity = settle(entity, appended)
        assert isinstance(entity, Compaction)
        update = {"sessionUpdate": "compaction_update", "compactionId": compaction_id}
        update = {**update, **entity.fields, "summary": list(entity.summary)}
        message = {"jsonrpc": "2.0", "method": SESSION_UPDATE,
                   "params": {"sessionId": sessions[compaction_id], "update": update}}  # fmt: skip
        replaced[group[0][0].seq] = orjson.dumps(message) + b"\n"
        for frame, _ in group[1:]:
            replaced[frame.seq] = None
    return replaced
