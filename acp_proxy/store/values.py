"""Sans-I/O values read from a recording: a connection row, a frame row, a search hit.

Rules:
- Frozen, slotted dataclasses with exactly the meaning of docs/recording-format.md; the
  store/readers.py builds them, renderers and the transcript model consume them.
- ``FrameRow`` satisfies ``observer.FrameLike``, so stored frames feed the transcript directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ConnectionRow:
    id: int
    uid: str
    label: str | None
    status: str
    started_ns: int
    ended_ns: int | None
    argv: list[str]
    cwd: str
    proxy_version: str
    exit_code: int | None
    exit_signal: int | None
    error: str | None
    protocol_version: int | None
    client_info: Any
    agent_info: Any
    frames_c2a: int
    frames_a2c: int
    lines_stderr: int
    frames_lost: int
    client_argv: list[str] | None = None  # the client's command line (format 7), if known
    # How it was carried (format 8): stdio, http or websocket; the remote agent's URL (a
    # bridge's too: its transport is stdio); where a remote client connected from.
    transport: str = "stdio"
    remote_url: str | None = None
    client_address: str | None = None

    @property
    def frames(self) -> int:
        return self.frames_c2a + self.frames_a2c + self.lines_stderr

    @property
    def remote(self) -> bool:
        """Carried over ACP's remote transport (recorded by ``record --listen``)."""
        return self.transport in ("http", "websocket")

    @property
    def ending(self) -> str:
        """How the agent ended, in words."""
        if self.exit_signal is not None:
            return f"signal {self.exit_signal}"
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        if self.status == "spawn_failed":
            return f"did not start ({self.error})" if self.error else "did not start"
        return self.status


@dataclass(frozen=True, slots=True)
class Carrier:
    """How a frame of a remote connection crossed (format 8): its stream (``post``,
    ``post_answer``, ``connection_sse``, ``session_sse``, ``websocket``) and the HTTP exchange
    that carried it, by its number in the connection, with that exchange's method and status
    (None while it is not answered)."""

    stream: str
    exchange: int
    method: str | None
    status: int | None


@dataclass(frozen=True, slots=True)
class FrameRow:
    """One stored frame with what ``show`` needs: parsed columns and request latency."""

    seq: int
    direction: str
    mono_ns: int
    wall_ns: int
    raw: bytes
    kind: str
    rpc_id: Any
    method: str | None
    session_id: str | None
    update_kind: str | None
    request_seq: int | None
    stop_reason: str | None
    error_code: int | None
    latency_ns: int | None = None  # responses: time since the request they answer
    offset: int = 0
    size: int = 0
    message_id: str | None = None
    tool_call_id: str | None = None
    flags: tuple[str, ...] = ()  # bad_json, bad_utf8, not_jsonrpc, batch, no_newline
    carrier: Carrier | None = None  # a remote connection's frame: how it crossed


MARK_START, MARK_END = "\x02", "\x03"  # around a match in a search snippet


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching frame: where it is, and a snippet with the match between the marks."""

    frame_id: int
    connection_id: int
    seq: int
    direction: str
    kind: str
    method: str | None
    wall_ns: int
    snippet: str
