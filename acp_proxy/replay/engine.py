"""Sans-I/O: the replay engine. Recorded script + what the live client sends -> what to send.

Rules:
- The caller feeds the client's frames (``receive``), says when its input ends
  (``client_closed``) and calls ``advance(now)``, which returns the bytes to write now, when to
  call again at the latest (``wake_at``) and whether the replay is over. Clocks are passed in
  (monotonic ns); nothing here reads a clock, a file or a socket.
- Agent frames go out in recorded order, each once the client frames recorded before it have
  arrived (script.py), at the time the timing mode says: ``asap``, the recorded gaps,
  or the gaps divided by N (``xN``), each capped by ``max_gap``.
- A client request or notification is matched to the first unused recorded one with the same
  cleaned method and params (match.py), per key in recorded order, as mitmproxy's server
  replay does. The recorded response goes back with the client's id bytes; every other frame is
  the recorded bytes (bound redaction placeholders excepted). Notices are dropped and counted.
- Recorded agent requests go out with their recorded ids; the client's answer is matched by id
  and compared with the recorded one: a difference is noted (a divergence), never fatal.
- A client message that matches nothing is a mismatch: a request gets a JSON-RPC error
  ``ERROR_CODE`` naming the recorded request that was expected. With ``on_mismatch="error"``
  the replay then ends; with ``"continue"`` it goes on, and a request for which an unused
  recorded request of the same method exists takes that one's place.
- Every wait for the client ends after ``timeout_ns``; a timeout ends the replay. When the
  replay ends early, each client request still waiting for a response the recording holds gets
  an ``ERROR_CODE`` error saying why. Same script + same client input = the same bytes out
  (timing aside).
- A request the recording never answered stays unanswered, whenever and however the replay
  ends: replay does what the recorded agent did. It is counted (``unanswered``), never a
  divergence, so a client that ends where the recording ended has not diverged.
- The comparer that says where two messages differ (protocol/diffing.py) is imported when a
  difference is first described, not with the engine: a replay that matches never pays for it
  before its first answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from acp_proxy.plural import counted
from acp_proxy.protocol.jsonrpc import Kind, decode, envelope, id_key
from acp_proxy.replay.expects import Expectations, describe
from acp_proxy.replay.ids import id_span, with_id
from acp_proxy.replay.match import Matcher, preview
from acp_proxy.replay.placeholders import Bindings
from acp_proxy.replay.script import AGENT_REQUEST, NOTICE, RESPONSE, SEND, Out, Script

ERROR_CODE = -32090  # JSON-RPC server-error range: "replay: not in the recording / stopped"
CANCEL_REQUEST = "$/cancel_request"


@dataclass(frozen=True, slots=True)
class Options:
    scale: float | None = None  # None: asap; 1.0: recorded gaps; 0.5: twice as fast (x2)
    max_gap_ns: int | None = None
    on_mismatch: str = "error"  # or "continue"
    timeout_ns: int = 30 * 10**9


class Step(NamedTuple):
    out: bytes
    wake_at: int | None  # call advance() again by then (None: only when input comes)
    done: bool


class Note(NamedTuple):
    seq: int | None  # the recorded frame concerned
    text: str


class Replay:
    """One replay of one script to one client (see module rules)."""

    def __init__(self, script: Script, matcher: Matcher, options: Options, now: int) -> None:
        self._outs = script.outs
        self._expects = Expectations(script.expects, now)
        self._matcher, self._options = matcher, options
        self._next = 0
        self._out_time = now
        self._pending: dict[int, bytes] = {}  # expect -> live id bytes, awaiting the response
        self._answered = frozenset(out.ref for out in script.outs if out.ref >= 0)
        self._recorded_id: dict[tuple[str, Any], Any] = {}  # live id -> recorded id
        self._wait_for, self._wait_since = -1, now
        self._buffer: list[bytes] = []
        self.bindings = Bindings()
        self.notes: list[Note] = []
        self.diverged = False
        self.ending: str | None = None
        self.client_closed_at: int | None = None
        self.sent = self.responses = self.agent_requests = self.notices = self.folded = 0
        self.matched = self.received = self.unanswered = 0

    def receive(self, raw: bytes, now: int) -> None:
        """One frame from the client (its bytes, newline included)."""
        if self.ending is not None:
            return
        self._send_due(now)  # what the recording sends before this frame's effects goes first
        self.received += 1
        value, failure = decode(raw)
        if failure is None:
            kind, rpc_id, method, payload, _ = envelope(value)
            if method is not None and kind in (Kind.REQUEST, Kind.NOTIFICATION):
                self._call(raw, kind, rpc_id, method, payload, now)
                return
            if kind in (Kind.RESPONSE, Kind.ERROR):
                self._answer(kind, rpc_id, payload, now)
                return
        self._other(raw.rstrip(b"\r\n"), now)

    def use(self, options: Options) -> None:
        """Go on with other options (an engine first run asap to catch up: replay.episodes)."""
        self._options = options

    def client_closed(self, now: int) -> None:
        if self.client_closed_at is None:
            self.client_closed_at = now

    def stop(self, reason: str) -> None:
        """End now (a signal, a client that stopped reading); a divergence unless complete."""
        if self.ending is None:
            self._end(reason, diverged=not self.complete)

    @property
    def complete(self) -> bool:
        return self._next == len(self._outs) and self._expects.all_came

    @property
    def frames_left(self) -> int:
        return len(self._outs) - self._next

    def advance(self, now: int) -> Step:
        wake: int | None = None
        if self.ending is None:
            wake = self._send_due(now)
            if wake is None:
                wake = self._check_waits(now)
        out = b"".join(self._buffer)
        self._buffer.clear()
        return Step(out, wake, self.ending is not None)

    def _send_due(self, now: int) -> int | None:
        outs, buffer, substitute = self._outs, self._buffer, self.bindings.substitute
        scale, cap, when = self._options.scale, self._options.max_gap_ns, self._expects.when
        index, end, prefix = self._next, len(outs), self._expects.prefix
        while index < end:
            out = outs[index]
            if out.gate > prefix:
                break
            if scale is not None:
                gap = int(out.gap_ns * scale)
                if cap is not None and gap > cap:
                    gap = cap
                due = (when[out.after] if out.after >= 0 else self._out_time) + gap
                if due > now:
                    self._next = index
                    return due
                self._out_time = due
            index += 1
            action = out.action
            if action == SEND:
                buffer.append(substitute(out.raw))
                self.sent += 1
            elif action == RESPONSE:
                self._respond(out)
            elif action == AGENT_REQUEST:
                buffer.append(substitute(out.raw))
                self.sent += 1
                self.agent_requests += 1
            elif action == NOTICE:
                self.notices += 1
            else:
                self.folded += 1
        self._next = index
        return None

    def _respond(self, out: Out) -> None:
        if out.ref < 0:  # answers a request the recording does not hold: send as recorded
            self._buffer.append(self.bindings.substitute(out.raw))
            self.sent += 1
            return
        live = self._pending.pop(out.ref, None)
        if live is None:
            self._note(out.seq, "a recorded response answers a request the client never sent")
            return
        self._buffer.append(self.bindings.substitute(with_id(out.raw, live)))
        self.sent += 1
        self.responses += 1

    def _check_waits(self, now: int) -> int | None:
        timeout = self._options.timeout_ns
        waiting = self._expects.waiting()
        if waiting is None and self._next < len(self._outs):
            return None  # not waiting for the client
        marker = -2 if waiting is None else self._expects.prefix
        if self._wait_for != marker:
            self._wait_for, self._wait_since = marker, now
        deadline = self._wait_since + timeout
        if waiting is None:
            if self.client_closed_at is not None:
                self._end("the client closed the connection", diverged=False)
            elif now >= deadline:
                text = f"the client did not close the connection within {timeout / 1e9:g}s"
                self._end(f"the recording was replayed; {text}", diverged=False)
            return None if self.ending else deadline
        if self.client_closed_at is not None:
            self._end(f"the client closed the connection before sending {describe(waiting)}")
        elif now >= deadline:
            self._end(f"timed out after {timeout / 1e9:g}s waiting for {describe(waiting)}")
        return None if self.ending else deadline

    def _call(
        self, raw: bytes, kind: Kind, rpc_id: Any, method: str, params: Any, now: int
    ) -> None:
        if method == CANCEL_REQUEST and isinstance(params, dict):
            target = params.get("requestId")
            if isinstance(target, str | int | float) and id_key(target) in self._recorded_id:
                params = {**params, "requestId": self._recorded_id[id_key(target)]}
        message = self._matcher.call(method, params)
        what = "request" if kind is Kind.REQUEST else "notification"
        index, bound = self._expects.find(method, what, message, self.bindings)
        live_id = b""
        if kind is Kind.REQUEST:
            span = id_span(raw)
            live_id = raw[span[0] : span[1]] if span else orjson.dumps(rpc_id)
        if index is None:
            index = self._mismatch(method, what, message, live_id)
            if index is None:
                return
        self.bindings.bind(bound)
        self._expects.consume(index, now)
        self.matched += 1
        if kind is Kind.REQUEST:
            if index in self._answered:
                self._pending[index] = live_id
            else:  # the recorded agent never answered it: neither does replay
                self.unanswered += 1
            recorded = self._expects.expects[index].rpc_id
            if recorded is not None:
                self._recorded_id[id_key(rpc_id)] = recorded[1]

    def _mismatch(self, method: str, what: str, message: Any, live_id: bytes) -> int | None:
        same = next(self._expects.candidates(method, what), None)
        expected = self._expects.expects[same] if same is not None else self._expects.waiting()
        text = f"no recorded {what} matches this {method}"
        if expected is not None:
            where = _differs_at(expected.message, message) if same is not None else None
            text += f"; expected {describe(expected)}" + (f", differs at {where}" if where else "")
        self._note(expected.seq if expected else None, f"mismatch: {text}")
        if self._options.on_mismatch == "continue" and same is not None:
            return same
        if live_id:
            data = {"replay": "mismatch", "expectedSeq": expected.seq if expected else None}
            self._buffer.append(error_frame(live_id, f"acp-proxy replay: {text}", data))
        if self._options.on_mismatch == "error":
            self._end(f"mismatch: {text}", noted=True)
        return None

    def _answer(self, kind: Kind, rpc_id: Any, payload: Any, now: int) -> None:
        message = self._matcher.answer("result" if kind is Kind.RESPONSE else "error", payload)
        index = self._expects.answer_for(rpc_id, self._next)
        if index is None:
            text = f"mismatch: an answer to id {rpc_id!r}, which replay has no request out for"
            self._note(None, text)
            if self._options.on_mismatch == "error":
                self._end(text, noted=True)
            return
        expect = self._expects.expects[index]
        bound = self.bindings.match(expect.message, message)
        if bound is None:
            where = _differs_at(expect.message, message) or "$"
            self._note(
                expect.seq,
                f"the client's answer to {expect.method} (id {rpc_id!r}) differs from the "
                f"recorded one at {where}: recorded {preview(expect.message)}, "
                f"got {preview(message)}",
            )
        else:
            self.bindings.bind(bound)
        self._expects.consume(index, now)
        self.matched += 1

    def _other(self, line: bytes, now: int) -> None:
        index = self._expects.other(line)
        if index is not None:
            self._expects.consume(index, now)
            self.matched += 1
            return
        text = f"mismatch: a line that is not a JSON-RPC request: {line[:80]!r}"
        self._note(None, text)
        if self._options.on_mismatch == "error":
            self._end(text, noted=True)

    def _note(self, seq: int | None, text: str) -> None:
        self.notes.append(Note(seq, text))
        self.diverged = True

    def _end(self, reason: str, *, diverged: bool = True, noted: bool = False) -> None:
        self.ending = reason
        if diverged and not noted:
            self._note(None, reason)
        for live_id in self._pending.values():
            data = {"replay": "stopped"}
            self._buffer.append(error_frame(live_id, f"acp-proxy replay stopped: {reason}", data))
        if self._pending:
            self._note(
                None, f"{counted(len(self._pending), 'client request')} answered with an error"
            )
        self._pending.clear()


def error_frame(live_id: bytes, message: str, data: dict[str, Any]) -> bytes:
    """A JSON-RPC error response with replay's code, for the client request ``live_id``."""
    error = orjson.dumps({"code": ERROR_CODE, "message": message, "data": data})
    return b'{"jsonrpc":"2.0","id":' + live_id + b',"error":' + error + b"}\n"


def _differs_at(expected: Any, message: Any) -> str | None:
    """Where ``message`` first differs from ``expected`` (the comparer is imported here, on
    first use: see the module rules)."""
    from acp_proxy.protocol.diffing import first_difference

    return first_difference(expected, message)
