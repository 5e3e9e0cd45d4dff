"""Sans-I/O rules on initialization, capabilities and the v1 prompt turn (digest 8, rules 8-16).

Rules:
- Capability gates read the capabilities both sides sent in ``initialize`` (``State``): v1
  booleans and v2 ``{}`` markers both count as "supported"; absent means unsupported.
- v1 turn rules follow the prompt response (``stopReason``) and ``session/cancel``; updates
  belong to a cancelled turn when they name a tool call or message id seen during that turn.
- Replay windows (from a ``session/load`` or ``session/resume`` request to its response) are
  kept in ``State`` by the engine.
"""

from __future__ import annotations

from acp_proxy.check.base import ERROR, Context, Event, Rule, RuleInfo, enabled, get, text
from acp_proxy.protocol import acp

_INIT = "docs/protocol/v1/initialization.mdx"
_TURN = "docs/protocol/v1/prompt-turn.mdx (Cancellation)"
V1_HISTORY = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
     "tool_call_update", "plan"}
)  # fmt: skip
_V1_GATES = {
    "session/load": ("agent", ("loadSession",)),
    "session/resume": ("agent", ("sessionCapabilities", "resume")),
    "session/list": ("agent", ("sessionCapabilities", "list")),
    "session/close": ("agent", ("sessionCapabilities", "close")),
    "session/delete": ("agent", ("sessionCapabilities", "delete")),
    "logout": ("agent", ("auth", "logout")),
    "fs/read_text_file": ("client", ("fs", "readTextFile")),
    "fs/write_text_file": ("client", ("fs", "writeTextFile")),
}
_V2_REMOVED = frozenset({"session/load", "session/set_mode", "authenticate", "logout"})


class InitializeFirst(Rule):
    info = RuleInfo(
        "ACP008", ERROR, "initialize comes before any session method",
        f"{_INIT} (Clients MUST initialize before a session can be created)",
        "send initialize first and wait for its response",
    )  # fmt: skip
    kinds = frozenset({"request", "notification"})
    methods = None

    def message(self, event: Event) -> None:
        method = event.method or ""
        if not self.state.initialize_seen and method.startswith("session/"):
            self.flag(event, f"{method} before initialize")


class V2Info(Rule):
    info = RuleInfo(
        "ACP009", ERROR, "v2: info is required in the initialize request and its response",
        "schema/v2/schema.json InitializeRequest / InitializeResponse",
        'add "info": {"name": ..., "version": ...} to initialize (request and result)',
    )  # fmt: skip
    kinds = frozenset({"request", "response"})
    methods = frozenset({acp.INITIALIZE})

    def message(self, event: Event) -> None:
        payload = event.params if event.kind == "request" else event.result
        if acp.protocol_version(payload) == acp.PROTOCOL_V2 and not isinstance(
            get(payload, "info"), dict
        ):
            side = "request" if event.kind == "request" else "response"
            self.flag(event, f"v2 initialize {side} without info")


class V1CapabilityGates(Rule):
    info = RuleInfo(
        "ACP010", ERROR, "v1: capability-gated methods are used only when advertised",
        f"{_INIT}; docs/protocol/v1/session-setup.mdx",
        "check the peer's capabilities from initialize before calling the method",
    )  # fmt: skip
    kinds = frozenset({"request"})
    methods = frozenset(
        {*_V1_GATES, *(m for m in acp.CLIENT_METHODS_V1 if m.startswith("terminal/"))}
    )

    def message(self, event: Event) -> None:
        if not self.state.v1:
            return
        method = event.method or ""
        side, path = _V1_GATES.get(method, ("client", ("terminal",)))
        caps = self.state.agent_caps if side == "agent" else self.state.client_caps
        if not enabled(get(caps, *path)):
            holder = "agentCapabilities" if side == "agent" else "clientCapabilities"
            self.flag(event, f"{method} without {holder}.{'.'.join(path)}")


class V2Removed(Rule):
    info = RuleInfo(
        "ACP011", ERROR,
        "v2: no fs/*, terminal/*, session/load, session/set_mode; no auth/* without authMethods",
        "docs/protocol/v2/migration.mdx; v2/draft/overview.mdx",
        "use session/resume with replayFrom, config options, agent-side tools; "
        "auth only if offered",
    )  # fmt: skip
    kinds = frozenset({"request", "notification"})
    methods = None

    def message(self, event: Event) -> None:
        if not self.state.v2:
            return
        method = event.method or ""
        if method in _V2_REMOVED or method.startswith(("fs/", "terminal/")):
            self.flag(event, f"{method} does not exist in v2")
        elif method in ("auth/login", "auth/logout"):
            methods = self.state.auth_methods
            if not (isinstance(methods, list) and methods):
                self.flag(event, f"{method} although the agent offered no authMethods")


class V1CompactionGate(Rule):
    info = RuleInfo(
        "ACP012", ERROR,
        "v1: compaction updates only if the client sent clientCapabilities.session.compaction",
        "docs/protocol/v1/draft/prompt-turn.mdx (Session Compaction)",
        "send compaction updates only to clients that advertised the capability",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_UPDATE})
    update_kinds = acp.COMPACTION_KINDS

    def message(self, event: Event) -> None:
        caps = self.state.client_caps
        if self.state.v1 and not enabled(get(caps, "session", "compaction")):
            self.flag(event, f"{event.update_kind} without clientCapabilities.session.compaction")


class V1StopReason(Rule):
    info = RuleInfo(
        "ACP013", ERROR, "v1: the session/prompt result has a stopReason from the closed set",
        "schema/v1/schema.json PromptResponse, StopReason",
        "answer with stopReason end_turn, max_tokens, max_turn_requests, refusal or cancelled",
    )  # fmt: skip
    kinds = frozenset({"response"})
    methods = frozenset({acp.SESSION_PROMPT})

    def message(self, event: Event) -> None:
        reason = get(event.result, "stopReason")
        if self.state.v1 and reason not in acp.STOP_REASONS:
            self.flag(event, f"stopReason {reason!r} is not one of v1's five")


class _TurnIds:
    """Tool call and message ids seen per session since its last prompt."""

    def __init__(self) -> None:
        self.ids: dict[str, set[str]] = {}

    def reset(self, session: str) -> None:
        self.ids[session] = set()

    def add(self, event: Event) -> None:
        if event.session_id in self.ids:
            for key in ("toolCallId", "messageId"):
                value = text(get(event.update, key))
                if value is not None:
                    self.ids[event.session_id].add(value)

    def names(self, event: Event, ids: set[str]) -> str | None:
        for key in ("toolCallId", "messageId"):
            value = text(get(event.update, key))
            if value is not None and value in ids:
                return value
        return None


class V1Cancel(Rule):
    info = RuleInfo(
        "ACP014", ERROR,
        "v1: after session/cancel the prompt ends with stopReason cancelled, after all its updates",
        _TURN, "catch the abort and answer the prompt with stopReason cancelled, updates first",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_PROMPT, acp.SESSION_CANCEL, acp.SESSION_UPDATE})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.turns = _TurnIds()
        self.cancelled: set[str] = set()
        self.closed: dict[str, set[str]] = {}

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v1 or session is None:
            return
        if event.kind == "request":  # a new prompt
            self.turns.reset(session)
            self.cancelled.discard(session)
            self.closed.pop(session, None)
        elif event.method == acp.SESSION_CANCEL:
            if any(p.method == acp.SESSION_PROMPT and p.session_id == session
                   for p in self.state.pending.values()):  # fmt: skip
                self.cancelled.add(session)
        elif event.kind == "notification":
            late = self.turns.names(event, self.closed.get(session, set()))
            if late is not None:
                self.flag(event, f"update for {late} of the cancelled turn after its response")
            self.turns.add(event)
        elif session in self.cancelled:
            self.cancelled.discard(session)
            self.closed[session] = self.turns.ids.get(session, set())
            reason = get(event.result, "stopReason")
            if event.kind == "error":
                self.flag(event, "prompt answered with an error after session/cancel")
            elif reason != "cancelled":
                self.flag(event, f"prompt ended with {reason!r} after session/cancel")


class PermissionCancelled(Rule):
    info = RuleInfo(
        "ACP015", ERROR,
        "After session/cancel the client answers pending permission requests with cancelled",
        f"{_TURN}; v2/draft/prompt-lifecycle.mdx (Cancellation)",
        'answer each pending session/request_permission with {"outcome": {"outcome": "cancelled"}}',
    )  # fmt: skip
    methods = frozenset({acp.SESSION_CANCEL, acp.REQUEST_PERMISSION})
    kinds = frozenset({"notification", "response"})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.must_cancel: set[int] = set()

    def message(self, event: Event) -> None:
        if event.kind == "notification":
            self.must_cancel |= {
                p.seq for p in self.state.pending.values()
                if p.method == acp.REQUEST_PERMISSION and p.session_id == event.session_id
            }  # fmt: skip
        elif event.request is not None and event.request.seq in self.must_cancel:
            self.must_cancel.discard(event.request.seq)
            outcome = get(event.result, "outcome", "outcome")
            if outcome != "cancelled":
                self.flag(event, f"permission answered {outcome!r} after session/cancel")


class V1Replay(Rule):
    info = RuleInfo(
        "ACP016", ERROR,
        "v1: session/load replays everything before its response; session/resume replays nothing",
        "docs/protocol/v1/session-setup.mdx",
        "send all history before answering session/load; none for session/resume",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_UPDATE, acp.SESSION_LOAD, acp.SESSION_PROMPT})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.after_load: set[str] = set()

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v1 or session is None:
            return
        if event.method == acp.SESSION_PROMPT:
            self.after_load.discard(session)
        elif event.method == acp.SESSION_LOAD:
            if event.kind == "response":
                self.after_load.add(session)
        elif event.update_kind in V1_HISTORY:
            window = self.state.replays.get(session)
            if window is not None and window.method == acp.SESSION_RESUME:
                self.flag(event, f"{event.update_kind} replayed during session/resume")
            elif session in self.after_load and event.update_kind == "user_message_chunk":
                self.flag(event, "user message replayed after the session/load response")


SESSION_RULES: tuple[type[Rule], ...] = (
    InitializeFirst, V2Info, V1CapabilityGates, V2Removed, V1CompactionGate, V1StopReason,
    V1Cancel, PermissionCancelled, V1Replay,
)  # fmt: skip
