"""Sans-I/O building blocks of the rule engine: findings, rule metadata, events, shared state.

Rules:
- ``Finding`` and ``RuleInfo`` are frozen values; a finding names its frame (connection, seq,
  direction), its rule and severity, and says what is wrong in one line.
- An ``Event`` is one JSON-RPC message as the observer reads it (protocol/observer.py: a batch
  gives one event per entry): sender, kind, method (a response gets its request's), session id,
  update kind, and for a response the pending request it answers. The rules never classify or
  correlate on their own.
- ``State`` holds the connection facts every rule may read: negotiated version, capabilities,
  pending requests per direction (the observer's correlator), open replay windows.
  ``State.after(event)`` updates them once all rules have seen the event; the pending requests
  are the observer's, already up to date with the whole frame (a response's request is in
  ``event.request``, an unanswered request a new one replaces in ``event.replaces``).
- A rule never raises on peer input: values of unexpected types are treated as absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from acp_proxy.check.schemas import SchemaBook
from acp_proxy.protocol import acp
from acp_proxy.protocol.jsonrpc import JsonId, PendingKey, id_key
from acp_proxy.protocol.jsonrpc import PendingRequest as Pending
from acp_proxy.protocol.observer import Event, FrameRecord
from acp_proxy.protocol.transport import Exchange, Transport

__all__ = [
    "Context", "Event", "Exchange", "Finding", "Pending", "Rule", "RuleInfo", "State", "Transport",
]  # fmt: skip

ERROR, WARNING = "error", "warning"
# ACP035 follows an unconfirmed draft (subagents): "do not enforce until the RFD lands".
DISABLED_BY_DEFAULT = frozenset({"ACP035"})
REPLAY_METHODS = frozenset({acp.SESSION_LOAD, acp.SESSION_RESUME})


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    severity: str
    summary: str
    source: str
    fix: str


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: str
    message: str
    seq: int | None
    direction: str | None
    connection_id: int | None = None


def get(mapping: Any, *keys: str) -> Any:
    """``mapping[k1][k2]...`` or None when any step is missing or not an object."""
    for key in keys:
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping


def enabled(value: Any) -> bool:
    """A capability flag: ``true`` or an object (v2 support markers are ``{}``)."""
    return value is True or isinstance(value, dict)


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(slots=True)
class State:
    """Connection facts shared by the rules (read them; ``after`` writes them)."""

    version: int | None = None
    requested_version: int | None = None
    initialize_seen: bool = False
    initialized: bool = False
    client_caps: Any = None
    agent_caps: Any = None
    auth_methods: Any = None
    pending: dict[PendingKey, Pending] = field(default_factory=dict)  # the observer's
    replays: dict[str, Event] = field(default_factory=dict)  # session -> open replay request
    session_state: dict[str, str] = field(default_factory=dict)  # last state_update per session
    cancel_requested: set[tuple[str, tuple[str, JsonId]]] = field(default_factory=set)

    @property
    def v2(self) -> bool:
        return self.version == acp.PROTOCOL_V2

    @property
    def v1(self) -> bool:
        return self.version == acp.PROTOCOL_V1

    def after(self, event: Event) -> None:
        if event.kind == "request":
            if event.method == acp.INITIALIZE and event.direction == "c2a":
                self.initialize_seen = True
                self.requested_version = acp.protocol_version(event.params)
                self.client_caps = get(event.params, "clientCapabilities") or get(
                    event.params, "capabilities"
                )
            elif event.method in REPLAY_METHODS and event.session_id is not None:
                self.replays[event.session_id] = event
        elif event.kind == "notification":
            if event.update_kind == "state_update" and event.session_id is not None:
                state = text(get(event.update, "state"))
                if state is not None:
                    self.session_state[event.session_id] = state
            elif event.method == acp.CANCEL_REQUEST and isinstance(event.params, dict):
                target = event.params.get("requestId")
                if target is None or isinstance(target, str | int | float):
                    self.cancel_requested.add((event.direction, id_key(target)))
        elif event.request is not None:
            request = event.request
            if request.session_id is not None and request.method in REPLAY_METHODS:
                self.replays.pop(request.session_id, None)
            if request.method == acp.INITIALIZE and event.kind == "response":
                self.initialized = True
                self.version = acp.protocol_version(event.result) or self.version
                self.agent_caps = get(event.result, "agentCapabilities") or get(
                    event.result, "capabilities"
                )
                self.auth_methods = get(event.result, "authMethods")


@dataclass(frozen=True, slots=True)
class Losses:
    """What a recording says it could not record (its connection row)."""

    frames: int
    size: int
    reason: str | None


class Context:
    """What a rule is given: the shared state, the schemas, and where findings go."""

    def __init__(
        self, schemas: SchemaBook | None, protocol_version: int | None, connection_id: int | None,
        losses: Losses | None = None,
    ) -> None:  # fmt: skip
        self.schemas = schemas
        self.state = State(version=protocol_version)
        self.connection_id = connection_id
        self.losses = losses
        self.remote = False  # a remote connection: the transport rules remember its messages
        self.transport: Transport | None = None  # a remote connection's, for ``finish``
        self.findings: list[Finding] = []
        self.record: FrameRecord | None = None  # the frame being checked, as it was given

    def report(self, info: RuleInfo, seq: int | None, direction: str | None, message: str) -> None:
        where = None if direction is None else str(direction)
        self.findings.append(
            Finding(info.id, info.severity, message, seq, where, self.connection_id)
        )


class Rule:
    """One rule. Subclasses set ``info`` and what they want, and override the hooks."""

    info: ClassVar[RuleInfo]
    wants_frames: ClassVar[bool] = False  # frame(): every c2a/a2c frame, parsed or not
    kinds: ClassVar[frozenset[str] | None] = None  # message kinds wanted (None: all)
    methods: ClassVar[frozenset[str] | None] = frozenset()  # methods wanted (None: all)
    update_kinds: ClassVar[frozenset[str] | None] = None  # session/update kinds (None: all)

    def __init__(self, context: Context) -> None:
        self.context = context
        self.state = context.state

    def wants(self, event: Event) -> bool:
        if self.kinds is not None and event.kind not in self.kinds:
            return False
        if self.methods is not None and event.method not in self.methods:
            return False
        if event.method == acp.SESSION_UPDATE and self.update_kinds is not None:
            return event.update_kind in self.update_kinds
        return True

    def report(self, seq: int | None, direction: str | None, message: str) -> None:
        self.context.report(self.info, seq, direction, message)

    def flag(self, event: Event, message: str) -> None:
        self.context.report(self.info, event.seq, event.direction, message)

    def frame(self, record: FrameRecord, value: Any) -> None:
        """Every c2a/a2c frame; ``value`` is the parsed JSON (None when not JSON-RPC)."""

    def message(self, event: Event) -> None:
        """Every message (batch entries one by one) this rule wants."""

    def finish(self) -> None:
        """End of the connection."""


class UpdateRule(Rule):
    """A rule about ``session/update`` notifications (``update_kinds`` narrows them)."""

    kinds = frozenset({"notification"})
    methods = frozenset({acp.SESSION_UPDATE})
