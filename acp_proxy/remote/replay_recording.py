"""``replay --listen --record``: the connections a replay serves, recorded through the hub.

Rules:
- The same pipeline as ``record --listen`` (record/hub.py, fed from the event loop by
  recording.HubFeeder): each transport connection the replay serves (an ``initialize`` POST
  that opened one, a WebSocket) is one recorded connection, ``http`` or ``websocket``, with
  every HTTP exchange it made, every message both ways as one frame, and the stream it
  crossed on, exactly as the listener records a live agent: a test or a team reads what the
  clients sent to the replayed agent with every reader.
- A message is recorded before it reaches the replay (the client's) or the client (the
  replay's), so an answer is never recorded before what it answers.
- Requests the replay server refuses before a connection exists (no ``initialize``, an unknown
  ``Acp-Connection-Id``) have no connection to belong to: they are not recorded. Refusals on a
  connection are recorded as exchanges with their status; the refused body is not a frame
  (the replay never saw it).
- Credential headers are recorded as present, without their value (remote/headers.py).
- A connection's row: its command line is the replay's, the replay's summary paragraph its one
  ``stderr`` line (as ``replay --record`` on stdio), its exit code 0 when the client
  matched the recording and 1 when it diverged, its status ``closed`` when the client left
  (DELETE, the WebSocket closed) and ``dropped`` when the listener stopped with it open.
- ``NoRecording`` stands in when ``--record`` is not given: every call does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.remote.headers import recordable

Headers = Sequence[tuple[bytes, bytes]]
STOPPED = "the listener stopped with the connection open"


class ConnectionRecording:
    """One served connection's recording (see the rules)."""

    def __init__(self, feeder: Any, key: int) -> None:
        self._feeder, self._key = feeder, key
        self.closed = False
        self._left: str | None = None  # how the client left, once it has
        self._diverged: bool | None = None  # the replay's outcome, once it has ended

    def exchange(
        self, scope: dict[str, Any] | Any, stream: str, status: int | None = None,
        answer_headers: Headers = (),
    ) -> int:  # fmt: skip
        """A new exchange for the request of ``scope``; answered at once when ``status``."""
        headers: Headers = scope.get("headers") or []
        values = {name.lower(): value.decode("latin-1") for name, value in headers}
        target = scope.get("raw_path", b"").decode("latin-1") or scope.get("path", "")
        seq: int = self._feeder.exchange(
            self._key, method=scope.get("method", "GET"), target=target,
            http_version=scope.get("http_version"), stream=stream,
            acp_connection_id=values.get(b"acp-connection-id"),
            acp_session_id=values.get(b"acp-session-id"), request_headers=recordable(headers),
        )  # fmt: skip
        if status is not None:
            self.answered(seq, status, answer_headers)
        return seq

    def answered(self, seq: int, status: int, headers: Headers = (), ended: bool = False) -> None:
        now = time.time_ns()
        columns: dict[str, Any] = {"status": status, "answered_ns": now}
        columns["response_headers"] = recordable(headers)
        if ended:
            columns["ended_ns"] = now
        self._feeder.exchange_set(self._key, seq, **columns)

    def ended(self, seq: int, error: str | None = None) -> None:
        self._feeder.exchange_set(self._key, seq, ended_ns=time.time_ns(), error=error)

    async def message(self, direction: Direction, raw: bytes, seq: int, stream: str) -> None:
        await self._feeder.message(self._key, direction, raw, seq, stream)

    async def messages(self, raws: list[bytes], seq: int, stream: str) -> None:
        """Agent messages one write sends (an event stream's chunk)."""
        await self._feeder.messages(self._key, Direction.AGENT_TO_CLIENT, raws, seq, stream)

    def identified(self, connection_id: str) -> None:
        self._feeder.update(self._key, remote_connection_id=connection_id)

    def outcome(self, diverged: bool, summary: str) -> None:
        """The replay of this connection ended (its summary paragraph is recorded as the
        agent's one ``stderr`` line, as ``replay --record`` records it on stdio); closed once
        the client has left too."""
        self._feeder.stderr_line(self._key, f"acp-proxy: {summary}\n".encode())
        self._diverged = diverged
        if self._left is not None:
            self.close()

    def client_left(self) -> None:
        """The client ended the connection (DELETE, the WebSocket closed)."""
        self._left = "closed"
        if self._diverged is not None:
            self.close()

    def close(self) -> None:
        """The row's end: its exit code (when the replay ended) and status (see the rules)."""
        if self.closed:
            return
        self.closed = True
        if self._diverged is not None:
            self._feeder.update(self._key, exit_code=1 if self._diverged else 0)
        if self._left is not None:
            self._feeder.close(self._key, self._left)
        else:
            self._feeder.close(self._key, "dropped", STOPPED)


class NoRecording(ConnectionRecording):
    """Without ``--record``: nothing is recorded."""

    def __init__(self) -> None:
        super().__init__(None, 0)

    def exchange(self, *_: Any, **__: Any) -> int:
        return 0

    def answered(self, *_: Any, **__: Any) -> None:
        pass

    def ended(self, *_: Any, **__: Any) -> None:
        pass

    async def message(self, *_: Any) -> None:
        pass

    async def messages(self, *_: Any) -> None:
        pass

    def identified(self, _: str) -> None:
        pass

    def outcome(self, *_: Any) -> None:
        pass

    def client_left(self) -> None:
        pass

    def close(self) -> None:
        pass


class ReplayRecording:
    """The recordings of one ``replay --listen --record``: a hub and its feeder."""

    def __init__(self, hub: Any, max_wait: float, argv: Sequence[str], listen_url: str) -> None:
        from acp_proxy.remote.recording import HubFeeder

        self.hub = hub
        self.feeder = HubFeeder(hub, max_wait)
        self.argv, self.listen_url = list(argv), listen_url

    def open(self, transport: str, scope: dict[str, Any] | Any) -> ConnectionRecording:
        client = scope.get("client")
        key, _ = self.feeder.open(
            transport, remote_url=None, listen_url=self.listen_url, argv=self.argv,
            client_address=f"{client[0]}:{client[1]}" if client else None,
        )  # fmt: skip
        return ConnectionRecording(self.feeder, key)

    def stop(self) -> None:
        self.feeder.stop()
