"""Sans-I/O: replay of a cassette holding several episodes, following the one the client lives.

Rules:
- An *episode* is one recorded connection; a cassette may hold several (docs/testing.md).
  Episodes that begin alike form a prefix tree, walked as the client talks: the replay serves
  one episode at a time with the ordinary engine (replay.py), starting with the first.
- The *log* is the conversation as the client lived it: each client frame as it came and each
  agent frame as it was sent, in order. It is what "the conversation so far" means below.
- While the current episode accepts the client's frames (no new mismatch or differing answer
  noted by the engine), it goes on. On a frame it does not accept, the other episodes are
  tried in file order: one is taken when replaying it to the same client frames would have
  told the client the same agent frames so far, normalized as ``diff`` normalizes (minted ids,
  JSON-RPC ids of agent requests and timestamps aside), and it accepts the new frame. That is
  checked by running a fresh engine for it over the log (so its state is exactly what it would
  be had it been followed from the start), as fast as causality allows whatever the timing
  option (the log already happened; the timing applies again from there on), the values
  pairing up as it goes (replay.values.ValueMap: what the client was told <-> what that
  episode recorded).
- From then on that episode is served: the client's frames are rewritten into its values
  before matching, and its frames into the values the client was told before sending.
- When no episode accepts the frame: with ``live``, the conversation is new and goes live
  (live.py: the caller starts the real agent, which is caught up with the log, then
  relayed); without it, the current engine answers as a single replay does (a mismatch).
- The interface is the engine's (``receive``, ``client_closed``, ``advance``, ``stop``), plus
  the agent side once live (``wants_agent``, ``to_agent``, ``agent_frame`` ...). Pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from acp_proxy.protocol.jsonrpc import NOT_JSON, Kind, decode, envelope, id_key, parse_json
from acp_proxy.protocol.normalize import Normalizer, canonical
from acp_proxy.replay.engine import Options, Replay, Step, error_frame
from acp_proxy.replay.ids import id_span
from acp_proxy.replay.live import Live
from acp_proxy.replay.match import Matcher
from acp_proxy.replay.placeholders import Bindings, has_placeholder
from acp_proxy.replay.script import Script
from acp_proxy.replay.values import ValueMap


def frames_of(out: bytes) -> Iterator[bytes]:
    """The frames in a run of output bytes, each with its newline (a last one may lack it)."""
    start = 0
    while start < len(out):
        end = out.find(b"\n", start)
        end = len(out) if end < 0 else end + 1
        yield out[start:end]
        start = end


class Episodes:
    """One client served from several recorded episodes (see the module rules)."""

    def __init__(
        self, scripts: Sequence[Script], matcher: Matcher, options: Options, now: int, *,
        live: bool = False, ignore: Sequence[str] = (),
    ) -> None:  # fmt: skip
        if not scripts:
            raise ValueError("no episode to replay")
        self._scripts = scripts
        self._matcher, self._options = matcher, options
        self._live_allowed, self._ignore = live, ignore
        self.current = 0
        self.replay = Replay(scripts[0], matcher, options, now)
        self.values = ValueMap()
        self.log: list[tuple[str, bytes]] = []
        self.live: Live | None = None
        self.path = [1]  # the episodes followed, numbered from 1
        self.went_live_after: int | None = None  # client frames replayed before going live
        self.received = 0
        self._out: list[bytes] = []
        self._answered_failure = False

    # --- the client side ------------------------------------------------------------------

    def receive(self, raw: bytes, now: int) -> None:
        """One frame from the client."""
        self.received += 1
        if self.live is not None:
            self.live.client_frame(raw)
            return
        self._emit(self.replay.advance(now).out)  # what is due before this frame goes first
        notes, ending = len(self.replay.notes), self.replay.ending
        self.replay.receive(self.values.to_peer_bytes(raw), now)
        if len(self.replay.notes) == notes and (ending is not None or self.replay.ending is None):
            self.log.append(("c2a", raw))
            return
        if self._switch(raw, now):
            self.log.append(("c2a", raw))
            return
        if self._live_allowed:
            self.went_live_after = sum(d == "c2a" for d, _ in self.log)
            self.live = Live(self.log, [raw], now, self._ignore)
            return
        self.log.append(("c2a", raw))  # the current engine answers with its mismatch

    def client_closed(self, now: int) -> None:
        if self.live is not None:
            self.live.client_closed()
        else:
            self.replay.client_closed(now)

    def stop(self, reason: str) -> None:
        if self.live is not None:
            if not self.live.caught_up:
                self.live.agent_failed(reason)
            self.live.agent_gone = True  # the relay ends with the client
        else:
            self.replay.stop(reason)

    def advance(self, now: int) -> Step:
        if self.live is None:
            step = self.replay.advance(now)
            self._emit(step.out)
            wake, done = step.wake_at, step.done
        else:
            wake = self.live.tick(now, self._options.timeout_ns)
            self._out.append(self.live.to_client())
            if self.live.failure is not None and not self._answered_failure:
                self._answered_failure = True
                self._out += self._pending_errors(self.live.failure)
            done = self.live.done
        out = b"".join(self._out)
        self._out.clear()
        return Step(out, wake, done)

    # --- the agent side, once live --------------------------------------------------------

    @property
    def wants_agent(self) -> bool:
        return self.live is not None

    def to_agent(self) -> bytes:
        return self.live.to_agent() if self.live is not None else b""

    @property
    def close_agent(self) -> bool:
        return self.live is not None and self.live.close_agent

    def agent_frame(self, raw: bytes, now: int) -> None:
        if self.live is not None:
            self.live.agent_frame(raw, now)

    def agent_closed(self) -> None:
        if self.live is not None:
            self.live.agent_closed()

    def agent_failed(self, reason: str) -> None:
        if self.live is not None:
            self.live.agent_failed(reason)

    # --- the verdict ----------------------------------------------------------------------

    @property
    def diverged(self) -> bool:
        if self.live is not None:
            return self.live.failure is not None
        return self.replay.diverged

    # --- inside ---------------------------------------------------------------------------

    def _emit(self, out: bytes) -> None:
        if not out:
            return
        for frame in frames_of(out):
            told = self.values.to_told_bytes(frame)
            self.log.append(("a2c", told))
            self._out.append(told)

    def _switch(self, raw: bytes, now: int) -> bool:
        for index, script in enumerate(self._scripts):
            if index == self.current:
                continue
            found = follow(script, self._matcher, self._options, [*self.log, ("c2a", raw)], now)
            if found is not None:
                self.current = index
                self.replay, self.values = found
                self.replay.use(self._options)
                self.path.append(index + 1)
                return True
        return False

    def _pending_errors(self, reason: str) -> list[bytes]:
        """Error answers to the client requests nobody answered (catch-up failed)."""
        pending: dict[tuple[str, Any], bytes] = {}
        frames = [*self.log, *(("c2a", raw) for raw in (self.live.held if self.live else []))]
        for direction, raw in frames:
            value, failure = decode(raw)
            if failure is not None:
                continue
            kind, rpc_id, _, _, _ = envelope(value)
            if direction == "c2a" and kind is Kind.REQUEST:
                span = id_span(raw)
                pending[id_key(rpc_id)] = raw[span[0] : span[1]] if span else orjson.dumps(rpc_id)
            elif direction == "a2c" and kind in (Kind.RESPONSE, Kind.ERROR):
                pending.pop(id_key(rpc_id), None)
        text = "acp-proxy replay: the real agent does not reproduce the recorded conversation"
        return [error_frame(live_id, text, {"replay": "stopped"}) for live_id in pending.values()]


def follow(
    script: Script, matcher: Matcher, options: Options, log: Sequence[tuple[str, bytes]],
    now: int,
) -> tuple[Replay, ValueMap] | None:  # fmt: skip
    """A fresh engine for ``script`` that has lived ``log`` (see the module rules), or None.

    The last frame of ``log`` is the client frame to accept; the engine's answer to it is left
    in the engine, to come out of its next ``advance``.
    """
    # As fast as causality allows, whatever the timing asked for: the log already happened.
    asap = Options(on_mismatch=options.on_mismatch, timeout_ns=options.timeout_ns)
    replay = Replay(script, matcher, asap, now)
    values = ValueMap()
    told_side, episode_side = Normalizer(), Normalizer()
    queue: deque[bytes] = deque()
    for direction, raw in log:
        if direction == "a2c":
            if not queue:
                queue.extend(frames_of(replay.advance(now).out))
            if not queue or not _same(told_side, episode_side, values, raw, queue.popleft()):
                return None
            continue
        queue.extend(frames_of(replay.advance(now).out))
        if queue:
            return None  # this episode had more to say before the client's frame
        sent = values.to_peer_bytes(raw)
        _client(told_side, raw)
        _client(episode_side, sent)
        notes = len(replay.notes)
        replay.receive(sent, now)
        if len(replay.notes) != notes or replay.ending is not None:
            return None
    return replay, values


def _client(normalizer: Normalizer, raw: bytes) -> None:
    """Client frames take part in numbering, so both sides number minted values alike."""
    value = parse_json(raw)
    if value is not NOT_JSON:
        normalizer.message("client", value)


def _same(
    told_side: Normalizer, episode_side: Normalizer, values: ValueMap, told_raw: bytes,
    episode_raw: bytes,
) -> bool:  # fmt: skip
    told, episode = parse_json(told_raw), parse_json(episode_raw)
    if told is NOT_JSON or episode is NOT_JSON:
        return told_raw.rstrip(b"\r\n") == episode_raw.rstrip(b"\r\n")
    if not values.learn(told, episode):
        return False
    told_text = canonical(told_side.message("agent", told))
    episode_text = canonical(episode_side.message("agent", episode))
    if told_text == episode_text:
        return True
    recorded = orjson.loads(episode_text)  # an unbound placeholder matches what was told
    return has_placeholder(recorded) and (
        Bindings().match(recorded, orjson.loads(told_text)) is not None
    )
