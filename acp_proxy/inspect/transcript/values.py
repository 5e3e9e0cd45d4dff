"""Sans-I/O values of the transcript model: what a client would render, frozen.

Rules:
- Every value here is a frozen, slotted dataclass built by ``transcript.py``; nothing here
  knows frames, bytes on the wire, clocks or databases.
- History entries (``Message``, ``ToolCall``, ``Plan``, ``Terminal``, ``Compaction``,
  ``Subagent``, ``UnknownUpdate``) compare by what a client shows, never by where or when they
  were seen: positions (``first_seq``), turns and origins are ``compare=False``. That is what
  lets a test say "the materialized history renders the same as the live stream".
- Events (``PromptTurn`` markers, ``Permission``, ``Notice``, ``StateChange``, ``Call``,
  ``Malformed``) are not history: they happened once, live, at ``seq``.
- JSON payloads are kept as parsed (dicts, lists); unknown fields are kept, never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Message:
    """A user, agent, thought or session-directed message (``role``: user/agent/thought/session).

    ``content`` is the list of content blocks as applied (chunks appended, upserts replacing);
    ``fields`` holds every other field of the upserts (``_meta``, sender and recipient ...).
    """

    role: str
    message_id: str | None
    content: tuple[Any, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)
    origin: str = field(default="update", compare=False)  # update, chunk or prompt


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool_call_id: str
    content: tuple[Any, ...] = ()
    fields: Mapping[str, Any] = field(
        default_factory=dict
    )  # title, kind, status, locations, rawInput, rawOutput ...
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)

    @property
    def title(self) -> str:
        title = self.fields.get("title")
        return title if isinstance(title, str) else self.tool_call_id

    @property
    def status(self) -> str | None:
        status = self.fields.get("status")
        return status if isinstance(status, str) else None


@dataclass(frozen=True, slots=True)
class Plan:
    """A plan: ``body`` is the v2 ``plan`` object, or ``{"entries": [...]}`` for a v1 ``plan``."""

    plan_id: str | None
    body: Mapping[str, Any] = field(default_factory=dict)
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)

    @property
    def entries(self) -> list[Any]:
        entries = self.body.get("entries", self.body.get("items"))
        return entries if isinstance(entries, list) else []


@dataclass(frozen=True, slots=True)
class Terminal:
    """An agent-owned display terminal (v2): output bytes as decoded from base64."""

    terminal_id: str
    output: bytes = b""
    fields: Mapping[str, Any] = field(default_factory=dict)  # command, cwd, exitStatus, _meta ...
    bad_chunks: int = field(default=0, compare=False)  # data that was not base64
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Compaction:
    compaction_id: str
    summary: tuple[Any, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)  # status, error, _meta ...
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)

    @property
    def status(self) -> str | None:
        status = self.fields.get("status")
        return status if isinstance(status, str) else None


@dataclass(frozen=True, slots=True)
class Subagent:
    """A child session announced by ``subagent_update`` (draft), keyed by its session id."""

    session_id: str
    fields: Mapping[str, Any] = field(
        default_factory=dict
    )  # title, description, capabilities, state ...
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class UnknownUpdate:
    """An update kind this model does not know, kept verbatim."""

    kind: str
    update: Any
    first_seq: int = field(default=0, compare=False)
    turn: int | None = field(default=None, compare=False)


Entry = Message | ToolCall | Plan | Terminal | Compaction | Subagent | UnknownUpdate


@dataclass(frozen=True, slots=True)
class TurnMark:
    """Where prompt turn ``turn`` started (``end=False``) or ended (``end=True``)."""

    seq: int
    turn: int
    end: bool


@dataclass(frozen=True, slots=True)
class Permission:
    """``session/request_permission`` and the client's answer (``outcome`` or ``error``)."""

    seq: int
    params: Mapping[str, Any]
    tool_call_id: str | None
    requested_ns: int
    turn: int | None = None
    answered_seq: int | None = None
    answered_ns: int | None = None
    outcome: Any = None
    error: Any = None

    @property
    def wait_ns(self) -> int | None:
        return None if self.answered_ns is None else self.answered_ns - self.requested_ns


@dataclass(frozen=True, slots=True)
class Notice:
    """A live advisory (``notice``): shown when it came, never part of the history."""

    seq: int
    severity: str | None
    title: str | None
    description: str | None
    update: Any


@dataclass(frozen=True, slots=True)
class StateChange:
    seq: int
    state: str | None
    stop_reason: str | None
    update: Any


@dataclass(frozen=True, slots=True)
class Call:
    """Any other request or notification (fs, terminal, extension methods ...), as sent."""

    seq: int
    caller: str  # client or agent
    method: str
    params: Any
    sent_ns: int
    notification: bool = False
    answered_seq: int | None = None
    answered_ns: int | None = None
    result: Any = None
    error: Any = None

    @property
    def latency_ns(self) -> int | None:
        return None if self.answered_ns is None else self.answered_ns - self.sent_ns


@dataclass(frozen=True, slots=True)
class Malformed:
    """A frame that is not JSON-RPC (or a response that answers no request)."""

    seq: int
    direction: str
    reason: str


Event = TurnMark | Permission | Notice | StateChange | Call | Malformed
Item = Entry | Event


@dataclass(frozen=True, slots=True)
class PromptTurn:
    """One ``session/prompt``: when it was accepted, produced output, ended, and what it used."""

    index: int
    session_id: str
    prompt_seq: int
    prompt: tuple[Any, ...]
    started_ns: int
    response_seq: int | None = None
    response_ns: int | None = None
    error: Any = None
    message_id: str | None = None
    first_output_ns: int | None = None
    end_seq: int | None = None
    end_ns: int | None = None
    stop_reason: str | None = None
    cancel_seq: int | None = None
    tool_calls: tuple[str, ...] = ()
    permission_wait_ns: int = 0
    permissions: int = 0
    usage: Any = None

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        return "finished" if self.end_seq is not None else "unfinished"


@dataclass(frozen=True, slots=True)
class SessionView:
    session_id: str
    opened_by: str | None
    timeline: tuple[Item, ...]
    turns: tuple[PromptTurn, ...]
    state: str | None = None
    usage: Any = None
    commands: Any = None
    config_options: Any = None
    mode: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def history(self) -> tuple[Entry, ...]:
        """What a replay of this session would rebuild: entries only, in first-seen order."""
        return tuple(i for i in self.timeline if not isinstance(i, _EVENT_TYPES))

    @property
    def notices(self) -> tuple[Notice, ...]:
        return tuple(i for i in self.timeline if isinstance(i, Notice))


_EVENT_TYPES = (TurnMark, Permission, Notice, StateChange, Call, Malformed)


@dataclass(frozen=True, slots=True)
class TranscriptView:
    protocol_version: int | None
    client_info: Any
    agent_info: Any
    sessions: tuple[SessionView, ...]
    events: tuple[Event, ...]  # not tied to a session: initialize, extension methods ...
    frames: int = 0
    stderr_lines: int = 0
    first_ns: int | None = None
    last_ns: int | None = None

    def session(self, session_id: str) -> SessionView | None:
        return next((s for s in self.sessions if s.session_id == session_id), None)
