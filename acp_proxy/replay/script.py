"""Sans-I/O: a recording turned into a replay script (what to send, what to wait for).

Rules:
- Only protocol frames (``c2a``, ``a2c``) take part; the agent's stderr is not replayed.
- Input: ``RecordedFrame`` rows, or ``Verbatim`` rows (``seq``, ``mono_ns``, ``raw`` and 1)
  for agent ``session/update`` notifications that are neither notices nor compactions, which
  are always sent as recorded (store/replay_reads.load_script reads them so, to load less).
- Every ``a2c`` frame becomes an ``Out`` with an action: ``SEND`` (recorded bytes as they are),
  ``RESPONSE`` (recorded bytes with the id of the client request it answers, ``ref`` = that
  request's ``Expect`` index), ``AGENT_REQUEST`` (sent as recorded, recorded id included),
  ``NOTICE`` (a live-only ``notice`` update: dropped and counted), ``FOLDED`` (replaced by a
  materialized history frame, or folded into one: history.py).
- Every ``c2a`` frame becomes an ``Expect``: a request or notification (matched on its cleaned
  method and params, match.py), an answer to an agent request (matched on the id), or
  anything else (matched on its bytes).
- An ``Out``'s ``gate`` is the number of ``c2a`` frames before it in the recording: it is sent
  once all of those have come from the live client, so the agent's frames keep their recorded
  order and never run ahead of the client input that caused them. ``gap_ns`` is the recorded
  time since the previous protocol frame, ``after`` the ``Expect`` index of that frame when it
  was a client frame (-1 when it was an agent frame), for the timing modes.
- ``select_session`` keeps one session's frames plus the connection's own (initialize,
  authenticate ...), and drops a request whose response belongs to another session.
- Pure: rows in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from acp_proxy.protocol.acp import LIVE_ONLY_UPDATE_KINDS, SESSION_UPDATE
from acp_proxy.protocol.jsonrpc import decode, envelope, id_key
from acp_proxy.replay.history import is_history_request, materialized
from acp_proxy.replay.match import Matcher
from acp_proxy.replay.placeholders import has_placeholder
from acp_proxy.store.replay_rows import RecordedFrame, ScriptRow

SEND, RESPONSE, AGENT_REQUEST, NOTICE, FOLDED = range(5)
REQUEST, NOTIFICATION, ANSWER, OTHER = "request", "notification", "answer", "other"


class Out(NamedTuple):
    raw: bytes
    action: int
    gate: int
    gap_ns: int
    after: int
    ref: int  # RESPONSE: the Expect it answers (-1: answers nothing replay sends)
    seq: int


@dataclass(slots=True)
class Expect:
    seq: int
    what: str  # REQUEST, NOTIFICATION, ANSWER, OTHER
    method: str | None
    message: Any  # comparable form (replay.match), or raw bytes for OTHER
    key: bytes | None  # canonical key; None when it holds placeholders (matched structurally)
    rpc_id: tuple[str, Any] | None = None  # REQUEST: recorded id; ANSWER: the agent request's
    request_out: int = -1  # ANSWER: index of the Out that sent the agent request
    history: bool = False  # a session/load or session/resume that replays history


@dataclass(slots=True)
class Script:
    outs: list[Out]
    expects: list[Expect]


def as_lines(script: Script) -> Script:
    """``script`` with every agent frame ending in a line break.

    A remote recording's frames are whole messages without one (docs/recording-format.md); a
    stdio client and ``replay --listen``'s routing both need one line per message. Frames that
    have one are kept as they are.
    """
    outs = [o if o.raw.endswith(b"\n") else o._replace(raw=o.raw + b"\n") for o in script.outs]
    return Script(outs, script.expects)


def select_session(frames: Sequence[RecordedFrame], session: str) -> list[RecordedFrame]:
    """One session's frames plus the connection-level ones (see module rules)."""
    foreign = {f.seq for f in frames if f.session_id not in (None, session)}
    foreign |= {f.request_seq for f in frames if f.seq in foreign and f.request_seq is not None}
    return [
        f for f in frames if f.seq not in foreign and f.request_seq not in foreign
    ]  # a response to a dropped request goes with it


def build(frames: Iterable[ScriptRow], matcher: Matcher) -> Script:
    rows = [f for f in frames if len(f) == 4 or f[1] in ("c2a", "a2c")]
    replaced = materialized([f for f in rows if isinstance(f, RecordedFrame)])
    outs: list[Out] = []
    expects: list[Expect] = []
    expect_of_seq: dict[int, int] = {}
    out_of_seq: dict[int, int] = {}
    previous_ns: int | None = None
    after = -1
    new_out = tuple.__new__  # Out(...) without the Python-level __new__: this loop is hot
    for frame in rows:
        if not isinstance(frame, RecordedFrame):  # Verbatim: sent as recorded
            seq, mono_ns, raw, _ = frame
            gap = 0 if previous_ns is None or mono_ns < previous_ns else mono_ns - previous_ns
            previous_ns = mono_ns
            outs.append(new_out(Out, (raw, SEND, len(expects), gap, after, -1, seq)))
            after = -1
            continue
        seq, direction, mono_ns, raw, kind, _, method, update_kind, request_seq, _ = frame
        gap = 0 if previous_ns is None or mono_ns < previous_ns else mono_ns - previous_ns
        previous_ns = mono_ns
        if direction == "c2a":
            expect = _expect(frame, matcher)
            if expect.what == ANSWER and request_seq in out_of_seq:
                expect.request_out = out_of_seq[request_seq]
            expect_of_seq[seq] = after = len(expects)
            expects.append(expect)
            continue
        action, ref = SEND, -1
        if seq in replaced:
            folded = replaced[seq]
            raw, action = (folded, SEND) if folded is not None else (raw, FOLDED)
        elif kind in {"response", "error"}:
            action = RESPONSE
            ref = expect_of_seq.get(request_seq, -1) if request_seq else -1
        elif kind == "request":
            action = AGENT_REQUEST
        elif update_kind in LIVE_ONLY_UPDATE_KINDS and method == SESSION_UPDATE:
            action = NOTICE
        if kind == "request":
            out_of_seq[seq] = len(outs)
        outs.append(new_out(Out, (raw, action, len(expects), gap, after, ref, seq)))
        after = -1
    return Script(outs, expects)


def _expect(frame: RecordedFrame, matcher: Matcher) -> Expect:
    value, failure = decode(frame.raw)
    if failure is None:
        kind, rpc_id, method, payload, _ = envelope(value)
        if method is not None and kind.value in (REQUEST, NOTIFICATION):
            message = matcher.call(method, payload)
            key = None if has_placeholder(message) else matcher.key(message)
            expect = Expect(frame.seq, kind.value, method, message, key)
            if kind.value == REQUEST:
                expect.rpc_id = id_key(rpc_id)
                expect.history = is_history_request(method, payload)
            return expect
        if kind.value in ("response", "error"):
            member = "result" if kind.value == "response" else "error"
            message = matcher.answer(member, payload)
            key = None if has_placeholder(message) else matcher.key(message)
            return Expect(frame.seq, ANSWER, frame.method, message, key, id_key(rpc_id))
    return Expect(frame.seq, OTHER, None, frame.raw.rstrip(b"\r\n"), frame.raw.rstrip(b"\r\n"))
