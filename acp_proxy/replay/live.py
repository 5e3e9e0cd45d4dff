"""Sans-I/O: going live mid-conversation: a real agent is caught up, then relayed to the client.

Rules:
- Input: the conversation so far as the client lived it (the *log*: the client's frames as it
  sent them and the agent frames as it was told them, in that order) and the client frames not
  handled yet (the one no recorded episode matched first).
- Catch-up: the log is played to the real agent by a ``drive.Drive``, the log standing for the
  recording: the client's frames go out in order, each once the agent frames before it have
  come from the agent and matched what the client was told (normalized as ``diff`` does, so
  minted ids, JSON-RPC ids and timestamps do not count; redaction placeholders the client was
  told match any text). The agent's own requests are answered with the client's answers to
  the corresponding told requests. The values the agent mints are learned on the way
  (``drive.values``: told -> live).
- A catch-up divergence (a differing frame, a missing or extra one, the agent's output ending,
  a timeout) is a ``failure``: the agent does not reproduce what the client was told, so the
  conversation cannot go on faithfully. Nothing is relayed then.
- Relay, once caught up: held client frames, then every later one, go to the agent with told
  values made live (and placeholders bound during catch-up filled in); agent frames go to the
  client with live values made told (replay.values.ValueMap). Values the live agent mints
  afterwards pass through as they are, except a request id the client already knows for
  another agent request (one it was told before going live, or handed out since): that
  request gets a fresh integer id for the client, and the client's answer goes back to the
  agent with the agent's own id.
- The client closing its side is held like a frame: ``close_agent`` says when the agent's
  stdin may close (caught up, nothing held). ``done`` once the agent's output has ended or
  catch-up failed.
- Pure: frames in, bytes out; clocks are passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acp_proxy.protocol.jsonrpc import id_key, is_request, parse_json
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.replay.drive import Drive, report

Log = list[tuple[str, bytes]]  # ("c2a" | "a2c", raw frame)


class Live:
    """One real agent taking over a conversation (see the module rules)."""

    def __init__(
        self, log: Iterable[tuple[str, bytes]], held: Iterable[bytes], now: int,
        ignore: Sequence[str] = (),
    ) -> None:  # fmt: skip
        log = list(log)
        reader = ConnectionObserver()  # the log read as a recording would be
        rows = [reader.row(n, direction, raw) for n, (direction, raw) in enumerate(log, start=1)]
        self.drive = Drive(rows, ignore)
        self._held = list(held)
        self._to_agent: list[bytes] = []
        self._to_client: list[bytes] = []
        self.failure: str | None = None
        self.caught_up = False
        self.client_gone = False
        self.agent_gone = False
        self.progress = now  # the last time the agent sent something (catch-up timeouts)
        self.relayed = 0  # client frames relayed after catch-up
        # Every agent request id the client knows: no live request may reuse one of them.
        self._told_request_ids = {
            id_key(request["id"])
            for direction, raw in log
            if direction == "a2c" and (request := _request(raw)) is not None
        }
        self._check()

    @property
    def done(self) -> bool:
        return self.failure is not None or self.agent_gone

    @property
    def close_agent(self) -> bool:
        """Whether the agent's stdin may be closed (the client closed, nothing left to send)."""
        return self.caught_up and self.client_gone and not self._held and not self._to_agent

    @property
    def held(self) -> list[bytes]:
        """The client frames not sent to the agent yet (waiting for catch-up)."""
        return list(self._held)

    def client_frame(self, raw: bytes) -> None:
        if self.failure is not None:
            return
        if self.caught_up:
            self._relay(raw)
        else:
            self._held.append(raw)

    def client_closed(self) -> None:
        self.client_gone = True

    def agent_frame(self, raw: bytes, now: int) -> None:
        self.progress = now
        if self.failure is not None:
            return
        if self.caught_up:
            self._keep_request_ids_apart(raw)
            self._to_client.append(self.drive.values.to_told_bytes(raw))
            return
        self.drive.receive(raw)
        self._check()

    def agent_closed(self) -> None:
        self.agent_gone = True
        if not self.caught_up and self.failure is None:
            self.drive.agent_closed()
            self._check()

    def agent_failed(self, reason: str) -> None:
        """The agent could not be started (or ended the run otherwise)."""
        if self.failure is None:
            self.failure = reason

    def tick(self, now: int, timeout_ns: int) -> int | None:
        """Catch-up's deadline: when to call again at the latest (None: no deadline)."""
        if self.caught_up or self.failure is not None or self.drive.expected is None:
            return None
        deadline = self.progress + timeout_ns
        if now >= deadline:
            self.drive.timed_out(timeout_ns / 1e9)
            self._check()
            return None
        return deadline

    def to_agent(self) -> bytes:
        """Bytes to write to the agent now."""
        if not self.caught_up and self.failure is None:
            self._to_agent.append(self.drive.outgoing())
            self._check()
        out = b"".join(self._to_agent)
        self._to_agent.clear()
        return out

    def to_client(self) -> bytes:
        """Bytes to write to the client now."""
        out = b"".join(self._to_client)
        self._to_client.clear()
        return out

    def _keep_request_ids_apart(self, raw: bytes) -> None:
        """Give a live agent request a fresh id if the client knows its id for another one."""
        request = _request(raw)
        values = self.drive.values
        if request is None or values.knows_peer_request(request["id"]):
            return
        told_id = request["id"]
        if id_key(told_id) in self._told_request_ids:
            numbers = [v for _, v in self._told_request_ids if isinstance(v, int)]
            told_id = max(numbers, default=-1) + 1
            values.learn_request(told_id, request["id"])
        self._told_request_ids.add(id_key(told_id))

    def _relay(self, raw: bytes) -> None:
        raw = self.drive.bindings.substitute(raw)
        self._to_agent.append(self.drive.values.to_peer_bytes(raw))
        self.relayed += 1

    def _check(self) -> None:
        if self.caught_up or self.failure is not None:
            return
        if self.drive.divergence is not None:
            self.failure = report(self.drive, "the conversation so far")
        elif self.drive.done:
            self.caught_up = True
            held, self._held = self._held, []
            for raw in held:
                self._relay(raw)


def _request(raw: bytes) -> dict[str, Any] | None:
    """The frame as a JSON-RPC request object, or None."""
    value = parse_json(raw)
    return value if is_request(value) else None
