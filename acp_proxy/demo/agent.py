"""Scripted demo coding agent: ``python -m acp_proxy.demo.agent``.

Rules:
- stdout carries ACP JSON-RPC only (the SDK writes it); the agent's own log lines go to stderr.
- Protocol v1. No authentication, no ``session/load``; every optional method it does not
  advertise answers ``-32601`` (method not found).
- Deterministic: session ids (``demo-session-N``), tool-call ids, message ids, texts and token
  counts depend only on what the client sent and on the file content the client served.
- The prompt names the file to look at with a ``resource_link`` block (``file://`` URI) or an
  ``@path`` word; relative paths resolve against the session's cwd. The agent asks permission
  before reading, and reads only through the client's ``fs/read_text_file``, only when the
  client advertised ``fs.readTextFile``.
- One turn: thought, plan, tool_call (read, pending), session/request_permission, then if allowed
  tool_call_update in_progress, fs/read_text_file, tool_call_update completed (line count);
  then agent_message_chunk pieces sharing a messageId, the plan all completed, usage_update,
  and the response ``stopReason: end_turn``.
- ``session/cancel`` (or a ``cancelled`` permission outcome) ends the running turn with
  ``stopReason: cancelled`` at its next step; no update for that turn follows the response.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from acp import (
    PROTOCOL_VERSION,
    Client,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    plan_entry,
    run_agent,
    start_read_tool_call,
    text_block,
    tool_content,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AudioContentBlock,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    ListSessionsResponse,
    LoadSessionResponse,
    McpServerStdio,
    PermissionOption,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    ResourceContentBlock,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    UsageUpdate,
)

from acp_proxy.demo import AGENT_NAME, demo_version

LOG = logging.getLogger(AGENT_NAME)

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
Update = (
    AgentThoughtChunk
    | AgentMessageChunk
    | AgentPlanUpdate
    | ToolCallStart
    | ToolCallProgress
    | UsageUpdate
)

CONTEXT_WINDOW = 200_000
WORDS_PER_CHUNK = 4
ALLOW_OPTIONS = ("allow-once", "allow-always")
PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
]


class TurnCancelled(Exception):
    """The client cancelled the running turn; the prompt answers ``cancelled``."""


@dataclass
class Session:
    cwd: str
    turns: int = 0
    tokens: int = 0
    cancelled: bool = False


def requested_file(prompt: list[ContentBlock], cwd: str) -> str | None:
    """The absolute path the prompt asks about: a file resource link first, else an @word."""
    for block in prompt:
        if isinstance(block, ResourceContentBlock):
            uri = urlparse(block.uri)
            if uri.scheme in ("file", ""):
                return os.path.normpath(os.path.join(cwd, unquote(uri.path)))
    for block in prompt:
        if isinstance(block, TextContentBlock):
            for word in block.text.split():
                path = word.removeprefix("@").rstrip(".,;:!?)")
                if word.startswith("@") and path:
                    return os.path.normpath(os.path.join(cwd, path))
    return None


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def describe_text(name: str, text: str) -> tuple[int, str]:
    """The line count of a file and the sentence the agent answers with."""
    lines = text.splitlines()
    nonblank = sum(1 for line in lines if line.strip())
    longest = max((len(line) for line in lines), default=0)
    return len(lines), (
        f"`{name}` has {plural(len(lines), 'line')}, {nonblank} of them non-blank; "
        f"its longest line is {plural(longest, 'character')} long."
    )


def chunks(text: str) -> list[str]:
    """Split a reply into the pieces it is streamed in (a few words each, spaces kept)."""
    words = text.split(" ")
    return [
        " ".join(words[i : i + WORDS_PER_CHUNK]) + (" " if i + WORDS_PER_CHUNK < len(words) else "")
        for i in range(0, len(words), WORDS_PER_CHUNK)
    ]


def plan(steps: list[str], done: int) -> AgentPlanUpdate:
    """The plan with the first ``done`` steps completed and the next one in progress."""
    entries: list[PlanEntry] = []
    for index, step in enumerate(steps):
        status: PlanEntryStatus = (
            "completed" if index < done else "in_progress" if index == done else "pending"
        )
        priority: PlanEntryPriority = "high" if index == 0 else "medium"
        entries.append(plan_entry(step, priority=priority, status=status))
    return update_plan(entries)


class DemoAgent:
    """A deterministic ACP agent that reads one file (with permission) and reports on it."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._can_read = False
        self._sessions: dict[str, Session] = {}

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RequestError.internal_error({"details": "agent is not connected"})
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        fs = client_capabilities.fs if client_capabilities else None
        self._can_read = bool(fs and fs.read_text_file)
        peer = client_info.name if client_info else "an unnamed client"
        LOG.info("initialize from %s (protocol %s)", peer, protocol_version)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(
                name=AGENT_NAME, title="acp-proxy demo agent", version=demo_version()
            ),
            auth_methods=[],
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session_id = f"demo-session-{len(self._sessions) + 1}"
        self._sessions[session_id] = Session(cwd=cwd)
        return NewSessionResponse(session_id=session_id)

    async def prompt(
        self, session_id: str, prompt: list[ContentBlock], **kwargs: Any
    ) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": "unknown session"}
            )
        session.turns += 1
        session.cancelled = False
        try:
            await self._turn(session_id, session, prompt)
        except TurnCancelled:
            LOG.info("%s turn %d cancelled", session_id, session.turns)
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.cancelled = True

    async def _emit(self, session_id: str, update: Update) -> None:
        self._check(session_id)
        await self.client.session_update(session_id, update)

    def _check(self, session_id: str) -> None:
        if self._sessions[session_id].cancelled:
            raise TurnCancelled

    async def _turn(self, session_id: str, session: Session, prompt: list[ContentBlock]) -> None:
        turn = session.turns
        path = requested_file(prompt, session.cwd)
        LOG.info("%s turn %d: file %s", session_id, turn, path or "(none)")
        reply = "Name a file with @path or attach one, and I will tell you how long it is."
        if path is None:
            steps = ["Answer without reading a file"]
            thought = "No file was named, so there is nothing to read; I will answer directly."
        else:
            name = os.path.basename(path) or path
            steps = [f"Read {name}", f"Count the lines of {name}", "Report the result"]
            thought = f"The user asked about {name}. I need to read it before I can answer."
        await self._emit(
            session_id,
            AgentThoughtChunk(
                session_update="agent_thought_chunk",
                content=text_block(thought),
                message_id=f"{session_id}-thought-{turn}",
            ),
        )
        await self._emit(session_id, plan(steps, done=0))
        read_chars = 0
        if path is not None:
            reply, read_chars = await self._read(session_id, f"read-{turn}", path)
        message_id = f"{session_id}-message-{turn}"
        for piece in chunks(reply):
            await self._emit(
                session_id,
                AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=text_block(piece),
                    message_id=message_id,
                ),
            )
        await self._emit(session_id, plan(steps, done=len(steps)))
        prompt_chars = sum(len(b.text) for b in prompt if isinstance(b, TextContentBlock))
        session.tokens += 200 + (prompt_chars + read_chars + len(reply)) // 4
        await self._emit(
            session_id,
            UsageUpdate(session_update="usage_update", used=session.tokens, size=CONTEXT_WINDOW),
        )

    async def _read(self, session_id: str, tool_id: str, path: str) -> tuple[str, int]:
        """Run the read tool call; returns the reply text and the characters read."""
        name = os.path.basename(path) or path
        title = f"Read {name}"
        await self._emit(session_id, start_read_tool_call(tool_id, title, path))
        self._check(session_id)
        decision = await self.client.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(
                tool_call_id=tool_id,
                title=title,
                kind="read",
                status="pending",
                locations=[ToolCallLocation(path=path)],
            ),
            options=PERMISSION_OPTIONS,
        )
        outcome = decision.outcome
        if not isinstance(outcome, AllowedOutcome):
            raise TurnCancelled
        if outcome.option_id not in ALLOW_OPTIONS:
            await self._finish(session_id, tool_id, "failed", "Permission denied by the user.")
            return f"I did not read `{name}` because permission was denied.", 0
        if not self._can_read:
            await self._finish(session_id, tool_id, "failed", "The client cannot read files.")
            return f"I cannot read `{name}`: this client does not offer fs/read_text_file.", 0
        await self._emit(session_id, update_tool_call(tool_id, status="in_progress"))
        try:
            content = (await self.client.read_text_file(session_id=session_id, path=path)).content
        except RequestError as exc:
            await self._finish(session_id, tool_id, "failed", f"Could not read {name}: {exc}")
            return f"I could not read `{name}` ({exc}).", 0
        count, reply = describe_text(name, content)
        summary = plural(count, "line")
        await self._finish(session_id, tool_id, "completed", summary, {"lines": count})
        return reply, len(content)

    async def _finish(
        self,
        session_id: str,
        tool_id: str,
        status: ToolCallStatus,
        text: str,
        raw_output: dict[str, int] | None = None,
    ) -> None:
        update = update_tool_call(
            tool_id, status=status, content=[tool_content(text_block(text))], raw_output=raw_output
        )
        await self._emit(session_id, update)

    # Everything below is not advertised in initialize, so it answers "method not found".

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise RequestError.method_not_found("authenticate")

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        raise RequestError.method_not_found("session/load")

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        raise RequestError.method_not_found("session/list")

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        raise RequestError.method_not_found("session/set_mode")

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        raise RequestError.method_not_found("session/set_config_option")

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        raise RequestError.method_not_found("session/resume")

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        raise RequestError.method_not_found("session/close")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        LOG.info("ignoring extension notification _%s", method)


def main() -> None:
    """Serve one client on stdin/stdout until stdin closes."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")
    LOG.info("%s %s ready on stdio", AGENT_NAME, demo_version())
    asyncio.run(run_agent(DemoAgent()))


if __name__ == "__main__":
    main()
