"""Sans-I/O rules on the v2 prompt lifecycle (digest 8, rules 17-21; the v2 draft text wins).

Rules:
- v2 only (negotiated ``protocolVersion`` 2). The prompt response is a receipt
  ``{"messageId": ...}``; the turn is reported through ``state_update`` (running, idle with
  ``stopReason``) and ``user_message``/``user_message_chunk`` updates with that message id.
- A turn is open from a ``session/prompt`` request until the next idle ``state_update`` of its
  session (one idle may end several queued prompts); an error answer closes it unopened.
- The draft text says the idle that ends foreground work MUST carry ``stopReason`` (the 2.4.0
  schema says SHOULD); the draft is newer, so a missing one is an error.
"""

from __future__ import annotations

from acp_proxy.check.base import ERROR, WARNING, Context, Event, Rule, RuleInfo, get, text
from acp_proxy.protocol import acp

_LIFECYCLE = "v2/draft/prompt-lifecycle.mdx"
USER_MESSAGES = frozenset({"user_message", "user_message_chunk"})
MESSAGE_KINDS = frozenset(
    {"user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
     "agent_thought", "agent_thought_chunk", "session_message", "session_message_chunk"}
)  # fmt: skip
WORK_KINDS = frozenset(
    {"agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk",
     "tool_call_update", "tool_call_content_chunk", "terminal_update", "terminal_output_chunk",
     "plan_update"}
)  # fmt: skip
_PROMPT_UPDATE = frozenset({acp.SESSION_PROMPT, acp.SESSION_UPDATE})


def state_of(event: Event) -> str | None:
    return text(get(event.update, "state")) if event.update_kind == "state_update" else None


class PromptReceipt(Rule):
    info = RuleInfo(
        "ACP017", ERROR,
        "v2: the prompt result is {messageId} and a user_message(_chunk) with that id appears",
        f"{_LIFECYCLE} (2. Prompt Accepted); PR #2175",
        "answer session/prompt with the inserted user message's messageId and report that "
        "message with the same id",
    )  # fmt: skip
    kinds = frozenset({"response", "notification"})
    methods = _PROMPT_UPDATE
    update_kinds = USER_MESSAGES

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.seen: set[tuple[str | None, str]] = set()
        self.expected: dict[tuple[str | None, str], Event] = {}
        self.returned: dict[tuple[str | None, str], int] = {}

    def message(self, event: Event) -> None:
        if not self.state.v2:
            return
        if event.kind == "notification":
            message_id = text(get(event.update, "messageId"))
            if message_id is not None:
                self.seen.add((event.session_id, message_id))
                self.expected.pop((event.session_id, message_id), None)
            return
        message_id = get(event.result, "messageId")
        if not isinstance(message_id, str):
            self.flag(event, f"prompt result has messageId {message_id!r}, not a string")
            return
        if get(event.result, "stopReason") is not None:
            self.flag(
                event, "prompt result carries stopReason: it belongs on the idle state_update"
            )
        key = (event.session_id, message_id)
        if key in self.returned:
            self.flag(event, f"messageId {message_id!r} already returned for #{self.returned[key]}")
        self.returned[key] = event.seq
        if key not in self.seen:
            self.expected[key] = event

    def finish(self) -> None:
        for (_, message_id), event in self.expected.items():
            self.flag(event, f"no user_message or user_message_chunk with messageId {message_id!r}")


class TurnStates(Rule):
    info = RuleInfo(
        "ACP018", ERROR,
        "v2: a prompt's work is reported with state_update running, then idle with stopReason",
        f"{_LIFECYCLE} (3. Agent Reports Output, 4. Report Completion)",
        "send state_update running when work starts and idle with stopReason when it ends",
    )  # fmt: skip
    kinds = frozenset({"request", "response", "error", "notification"})
    methods = _PROMPT_UPDATE
    update_kinds = frozenset({"state_update"})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.open: dict[str, list[Event]] = {}  # session -> prompts of its open turn
        self.running: set[str] = set()

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v2 or session is None:
            return
        if event.kind == "request":
            self.open.setdefault(session, []).append(event)
            if self.state.session_state.get(session) in ("running", "requires_action"):
                self.running.add(session)
        elif event.kind == "error" and event.request is not None:
            prompts = self.open.get(session, [])
            self.open[session] = [p for p in prompts if p.seq != event.request.seq]
        elif event.kind == "notification":
            state = state_of(event)
            if state == "running":
                self.running.add(session)
            elif state == "idle" and self.open.get(session):
                if session not in self.running:
                    self.flag(event, "the turn went idle without ever reporting running")
                if get(event.update, "stopReason") is None:
                    self.flag(event, "the idle state_update that ends the turn has no stopReason")
                self.open[session] = []
                self.running.discard(session)

    def finish(self) -> None:
        for prompts in self.open.values():
            for prompt in prompts:
                self.flag(prompt, "the turn never ended: no idle state_update followed this prompt")


class MessageIds(Rule):
    info = RuleInfo(
        "ACP019", ERROR, "v2: every message update and chunk has a string messageId",
        "schema/v2/schema.json SessionUpdate; v2/draft/prompt-lifecycle.mdx",
        "add the message's messageId to every user/agent/thought message update and chunk",
    )  # fmt: skip
    kinds = frozenset({"notification"})
    methods = frozenset({acp.SESSION_UPDATE})
    update_kinds = MESSAGE_KINDS

    def message(self, event: Event) -> None:
        if self.state.v2 and not isinstance(get(event.update, "messageId"), str):
            self.flag(event, f"{event.update_kind} without a messageId")


class V2Cancel(Rule):
    info = RuleInfo(
        "ACP020", ERROR,
        "v2: session/cancel is confirmed by an idle state_update with stopReason cancelled, "
        "after every update of the cancelled work",
        f"{_LIFECYCLE} (Cancellation)",
        "send the cancelled work's last updates, then idle with stopReason cancelled",
    )  # fmt: skip
    kinds = frozenset({"request", "notification"})
    methods = frozenset({acp.SESSION_PROMPT, acp.SESSION_CANCEL, acp.SESSION_UPDATE})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.turn_ids: dict[str, set[str]] = {}
        self.expecting: dict[str, Event] = {}  # session -> the cancel awaiting confirmation
        self.closed: dict[str, set[str]] = {}

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v2 or session is None:
            return
        if event.kind == "request":
            self.turn_ids[session] = set()
            self.closed.pop(session, None)
        elif event.method == acp.SESSION_CANCEL:
            active = self.state.session_state.get(session) in ("running", "requires_action")
            if active or session in self.turn_ids:
                self.expecting[session] = event
        elif state_of(event) == "idle":
            ids = self.turn_ids.pop(session, set())
            cancel = self.expecting.pop(session, None)
            if cancel is not None:
                self.closed[session] = ids
                reason = get(event.update, "stopReason")
                if reason != "cancelled":
                    self.flag(event, f"idle after session/cancel has stopReason {reason!r}")
        else:
            ids = {i for k in ("toolCallId", "messageId") if (i := text(get(event.update, k)))}
            late = ids & self.closed.get(session, set())
            if late:
                self.flag(event, f"update for {sorted(late)[0]} after cancellation was confirmed")
            if session in self.turn_ids:
                self.turn_ids[session] |= ids

    def finish(self) -> None:
        for cancel in self.expecting.values():
            self.flag(cancel, "no idle state_update with stopReason cancelled followed")


class RequiresAction(Rule):
    info = RuleInfo(
        "ACP021", WARNING,
        "v2: requires_action while a permission request is outstanding; running when work resumes",
        f"{_LIFECYCLE} (5. Tool Invocation; SHOULD)",
        "send state_update requires_action with the permission request and running after it",
    )  # fmt: skip
    methods = frozenset({acp.REQUEST_PERMISSION, acp.SESSION_UPDATE})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.waiting: dict[int, tuple[str, bool]] = {}  # permission seq -> (session, seen)
        self.resuming: set[str] = set()

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v2 or session is None:
            return
        if event.kind == "request":
            current = self.state.session_state.get(session)
            self.waiting[event.seq] = (session, current == "requires_action")
        elif event.request is not None:
            if not self.waiting.pop(event.request.seq, (session, True))[1]:
                self.report(
                    event.request.seq, event.request.direction,
                    "no state_update requires_action while this permission request was pending",
                )  # fmt: skip
            self.resuming.add(session)
        elif event.update_kind == "state_update":
            if state_of(event) == "requires_action":
                for seq, (owner, _) in self.waiting.items():
                    if owner == session:
                        self.waiting[seq] = (owner, True)
            self.resuming.discard(session)
        elif event.update_kind in WORK_KINDS and session in self.resuming:
            self.resuming.discard(session)
            if self.state.session_state.get(session) == "requires_action":
                self.flag(event, "work resumed after the permission answer without running")


LIFECYCLE_RULES: tuple[type[Rule], ...] = (
    PromptReceipt, TurnStates, MessageIds, V2Cancel, RequiresAction,
)  # fmt: skip
