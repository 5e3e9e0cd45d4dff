"""Sans-I/O rules on notices, compaction, replay and subagents (digest 8, rules 28-35).

Rules:
- A replay window runs from a ``session/load`` request, or a ``session/resume`` request with a
  non-null ``replayFrom``, to its response (``State.replays``). History sent inside it is
  replay; the compaction lifecycle there is the materialized one (terminal first is fine,
  ids seen live earlier come back).
- Compaction state is kept per (session, compactionId): unseen, in progress, or ended.
- ACP034 compares replayed user messages with this connection's prompts: a replayed message
  whose content equals a prompt's, under another id, while that prompt's returned id is
  absent from the replay, lost its id. Earlier connections are not consulted.
- ACP035 follows an unconfirmed draft (subagents) and is disabled unless selected.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.base import ERROR, WARNING, Context, Event, Rule, RuleInfo, get, text
from acp_proxy.check.rules.lifecycle import MESSAGE_KINDS, USER_MESSAGES
from acp_proxy.protocol import acp

_COMPACTION = "docs/rfds/session-compaction.mdx (Identity and lifecycle)"
_SETUP = "v2/draft/session-setup.mdx (Resuming Sessions)"
TERMINAL = "ended"
V2_HISTORY = MESSAGE_KINDS | frozenset(
    {"tool_call_update", "tool_call_content_chunk", "plan_update", "terminal_update",
     "terminal_output_chunk", "compaction_update", "compaction_summary_chunk"}
)  # fmt: skip


def replaying(rule: Rule, event: Event) -> bool:
    """Whether ``event`` falls in a replay window of its session."""
    window = rule.state.replays.get(event.session_id or "")
    if window is None:
        return False
    return window.method == acp.SESSION_LOAD or get(window.params, "replayFrom") is not None


class NoNoticeInReplay(Rule):
    info = RuleInfo(
        "ACP028", WARNING, "No notice is replayed (between a replay request and its response)",
        f"docs/rfds/session-notices.mdx; {_SETUP}",
        "send notices live only; re-emit a still-relevant one after the replay as a new notice",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_UPDATE})
    update_kinds = frozenset({"notice"})

    def message(self, event: Event) -> None:
        if replaying(self, event):
            self.flag(event, "notice sent during a replay")


class _Compaction(Rule):
    """Shared bookkeeping: the lifecycle state of each compaction id, per session."""

    methods = frozenset({acp.SESSION_UPDATE})
    update_kinds = acp.COMPACTION_KINDS

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.phase: dict[tuple[str | None, str], str] = {}

    def message(self, event: Event) -> None:
        compaction = text(get(event.update, "compactionId"))
        if compaction is None:
            return
        key = (event.session_id, compaction)
        before = self.phase.get(key)
        status = get(event.update, "status")
        self.check(event, compaction, before, status, replaying(self, event))
        if event.update_kind == "compaction_update" and isinstance(status, str):
            self.phase[key] = "in_progress" if status == "in_progress" else TERMINAL

    def check(self, event: Event, cid: str, before: str | None, status: Any, replay: bool) -> None:
        raise NotImplementedError


class CompactionStart(_Compaction):
    info = RuleInfo(
        "ACP029", ERROR,
        "A compaction starts with compaction_update; chunks only while it is in_progress",
        _COMPACTION, "send compaction_update in_progress before any summary chunk",
    )  # fmt: skip

    def check(self, event: Event, cid: str, before: str | None, status: Any, replay: bool) -> None:
        if event.update_kind == "compaction_summary_chunk" and before is None and not replay:
            self.flag(event, f"summary chunk for {cid!r} before its first compaction_update")


class CompactionEnd(_Compaction):
    info = RuleInfo(
        "ACP030", ERROR,
        "Exactly one terminal status per compaction; no chunks after it; ids never reused",
        _COMPACTION, "end each compaction once, with a fresh compactionId for the next one",
    )  # fmt: skip

    def check(self, event: Event, cid: str, before: str | None, status: Any, replay: bool) -> None:
        if before != TERMINAL or replay:
            return
        if event.update_kind == "compaction_summary_chunk":
            self.flag(event, f"summary chunk for {cid!r} after its terminal update")
        else:
            self.flag(event, f"compaction {cid!r} updated ({status!r}) after its terminal status")


class CompactionFields(_Compaction):
    info = RuleInfo(
        "ACP031", ERROR, "A non-empty summary only with completed; error only with failed",
        "schema/v2/schema.unstable.json CompactionUpdate",
        "send summary with status completed and error with status failed only",
    )  # fmt: skip
    update_kinds = frozenset({"compaction_update"})

    def check(self, event: Event, cid: str, before: str | None, status: Any, replay: bool) -> None:
        summary, error = get(event.update, "summary"), get(event.update, "error")
        if isinstance(summary, list) and summary and status != "completed":
            self.flag(event, f"compaction {cid!r} has a summary with status {status!r}")
        if error is not None and status != "failed":
            self.flag(event, f"compaction {cid!r} has an error with status {status!r}")


class CompactionMaterialized(_Compaction):
    info = RuleInfo(
        "ACP032", WARNING,
        "Replay sends a compaction as one terminal compaction_update; "
        "terminal-first only in replay",
        "docs/rfds/session-compaction.mdx (replay); expectation, not MUST",
        "replay the finished compaction as one update; stream live ones from in_progress",
    )  # fmt: skip

    def check(self, event: Event, cid: str, before: str | None, status: Any, replay: bool) -> None:
        if replay and (status == "in_progress" or event.update_kind == "compaction_summary_chunk"):
            self.flag(event, f"compaction {cid!r} replayed in its transient form")
        elif (
            not replay and before is None and event.update_kind == "compaction_update"
            and status != "in_progress"
        ):  # fmt: skip
            self.flag(event, f"compaction {cid!r} first seen with terminal status {status!r}")


class V2ResumeReplay(Rule):
    info = RuleInfo(
        "ACP033", ERROR,
        "v2: resume without replayFrom replays nothing; with it, all history (with messageIds) "
        "comes before the response",
        _SETUP, "replay only when asked, entirely before answering session/resume",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_UPDATE, acp.SESSION_RESUME, acp.SESSION_PROMPT})
    update_kinds = V2_HISTORY

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.after_replay: set[str] = set()

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v2 or session is None:
            return
        if event.method == acp.SESSION_PROMPT:
            self.after_replay.discard(session)
        elif event.method == acp.SESSION_RESUME:
            if event.kind == "response" and get(event.request and event.request.params,
                                                "replayFrom") is not None:  # fmt: skip
                self.after_replay.add(session)
        elif (window := self.state.replays.get(session)) is not None:
            if get(window.params, "replayFrom") is None:
                self.flag(event, f"{event.update_kind} replayed by a resume without replayFrom")
            elif event.update_kind in MESSAGE_KINDS and get(event.update, "messageId") is None:
                self.flag(event, f"replayed {event.update_kind} without a messageId")
        elif session in self.after_replay and event.update_kind in USER_MESSAGES:
            self.flag(event, "user message replayed after the session/resume response")


class ReplayKeepsIds(Rule):
    info = RuleInfo(
        "ACP034", ERROR,
        "v2: a replayed user message keeps the messageId its session/prompt returned",
        "v2/draft/prompt-lifecycle.mdx (2. Prompt Accepted); PR #2175",
        "store the id returned for each prompt and replay the message under it",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_UPDATE, acp.SESSION_PROMPT, acp.SESSION_RESUME})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.prompts: dict[str, dict[int, tuple[Any, str | None]]] = {}  # seq -> content, id
        self.replayed: dict[str, dict[str, list[Any]]] = {}

    def message(self, event: Event) -> None:
        session = event.session_id
        if not self.state.v2 or session is None:
            return
        if event.method == acp.SESSION_PROMPT:
            self._prompt(event, session)
        elif event.method == acp.SESSION_RESUME and event.request is not None:
            self._compare(event, self.replayed.pop(session, {}), self.prompts.get(session, {}))
        elif event.update_kind in USER_MESSAGES and replaying(self, event):
            message_id = text(get(event.update, "messageId"))
            content = get(event.update, "content")
            if message_id is not None:
                blocks = self.replayed.setdefault(session, {}).setdefault(message_id, [])
                if event.update_kind == "user_message":
                    blocks[:] = content if isinstance(content, list) else []
                else:
                    blocks.append(content)

    def _prompt(self, event: Event, session: str) -> None:
        prompts = self.prompts.setdefault(session, {})
        if event.kind == "request":
            prompts[event.seq] = (get(event.params, "prompt"), None)
        elif event.request is not None and event.request.seq in prompts:
            content, _ = prompts[event.request.seq]
            prompts[event.request.seq] = (content, text(get(event.result, "messageId")))

    def _compare(
        self, event: Event, replayed: dict[str, list[Any]], prompts: dict[int, tuple[Any, Any]]
    ) -> None:
        returned = {i for _, i in prompts.values() if i is not None}
        for message_id, content in replayed.items():
            if message_id in returned:
                continue
            for seq, (prompt, prompt_id) in prompts.items():
                if prompt_id is not None and prompt_id not in replayed and prompt == content:
                    self.flag(
                        event,
                        f"replayed user message {message_id!r} is prompt #{seq}, "
                        f"whose session/prompt returned {prompt_id!r}",
                    )


class SubagentsAnnounced(Rule):
    info = RuleInfo(
        "ACP035", ERROR,
        "(draft, off by default) A child session is announced by subagent_update before use; "
        "clients never prompt a child",
        "PR #1992 subagents RFD (unconfirmed draft); 2.4.0 v2 unstable SubagentUpdate",
        "send subagent_update on the parent before any message naming the child",
    )  # fmt: skip
    kinds = frozenset({"request", "notification", "response"})
    methods = None

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.known: set[str] = set()
        self.children: set[str] = set()
        self.unannounced: dict[str, Event] = {}

    def message(self, event: Event) -> None:
        session = event.session_id
        if session is None:
            return
        if event.kind == "response" or event.method in (acp.SESSION_LOAD, acp.SESSION_RESUME):
            self.known.add(session)
        elif event.update_kind == "subagent_update":
            child = text(get(event.update, "sessionId"))
            if child is not None:
                self.children.add(child)
                first = self.unannounced.pop(child, None)
                if first is not None:
                    self.flag(first, f"session {child!r} used before subagent_update announced it")
        elif event.method == acp.SESSION_PROMPT and session in self.children:
            self.flag(event, f"session/prompt sent to child session {session!r}")
        if session not in self.known and session not in self.children:
            self.unannounced.setdefault(session, event)


REPLAY_RULES: tuple[type[Rule], ...] = (
    NoNoticeInReplay, CompactionStart, CompactionEnd, CompactionFields, CompactionMaterialized,
    V2ResumeReplay, ReplayKeepsIds, SubagentsAnnounced,
)  # fmt: skip
