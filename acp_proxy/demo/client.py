"""Demo ACP client: ``python -m acp_proxy.demo.client [--prompt TEXT] [--file PATH] -- AGENT_CMD``.

Rules:
- Speaks ACP only on the agent's stdin/stdout; the agent's stderr passes straight through to
  ours (never read, so it can never fill up and block the agent).
- Prints what a user would see to ``out``, never raw JSON: agent text, thoughts, plans, tool calls
  with their status, permission decisions, file reads, usage and each turn's stop reason.
- Advertises only ``fs.readTextFile``. Approves every permission request with an allow option
  (``allow_once`` first) and serves ``fs/read_text_file`` for any absolute path from disk: it is
  a demo peer for the demo agent, not a sandbox.
- ``--file`` is attached to every prompt as a ``resource_link`` block with a ``file://`` URI.
- The whole conversation must finish within ``timeout`` seconds. At the end the client closes
  the agent's stdin and waits ``shutdown_timeout`` seconds for it to exit, then terminates it
  (and after as long again, kills it).
- Exit status 0 only when every request succeeded and the agent exited with status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from acp import (
    PROTOCOL_VERSION,
    Agent,
    RequestError,
    resource_link_block,
    spawn_agent_process,
    text_block,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AudioContentBlock,
    AvailableCommandsUpdate,
    ClientCapabilities,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CreateElicitationResponse,
    CreateTerminalResponse,
    CurrentModeUpdate,
    DeniedOutcome,
    ElicitationMode,
    EmbeddedResourceContentBlock,
    EnvVariable,
    FileEditToolCallContent,
    FileSystemCapabilities,
    ImageContentBlock,
    Implementation,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    SessionInfoUpdate,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from acp_proxy.demo import CLIENT_NAME, demo_version

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)

DEFAULT_PROMPT_WITH_FILE = "How long is the attached file?"
DEFAULT_PROMPT = "Hello! What can you do?"
ALLOW_PREFERENCE = ("allow_once", "allow_always")
PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContentBlock):
        return block.text
    if isinstance(block, ResourceContentBlock):
        return f"<{block.uri}>"
    return f"<{block.type}>"


def tool_text(update: ToolCallStart | ToolCallProgress) -> str:
    parts: list[str] = []
    for item in update.content or []:
        if isinstance(item, ContentToolCallContent):
            parts.append(block_text(item.content))
        elif isinstance(item, FileEditToolCallContent):
            parts.append(f"<diff {item.path}>")
        else:
            parts.append(f"<terminal {item.terminal_id}>")
    return "; ".join(parts)


class Transcript:
    """The user's view of the conversation: one labelled line per event, chunks streamed."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._open: tuple[str, str | None] | None = None

    def line(self, label: str, text: str) -> None:
        self.end_stream()
        self._out.write(f"{label}: {text}\n")
        self._out.flush()

    def chunk(self, label: str, message_id: str | None, text: str) -> None:
        if self._open != (label, message_id):
            self.end_stream()
            self._out.write(f"{label}: ")
            self._open = (label, message_id)
        self._out.write(text)

    def end_stream(self) -> None:
        if self._open is not None:
            self._out.write("\n")
            self._out.flush()
            self._open = None


class DemoClient:
    """An ACP client that shows everything, approves everything and reads files from disk."""

    def __init__(self, transcript: Transcript) -> None:
        self._transcript = transcript
        self._tools: dict[str, str] = {}

    def on_connect(self, conn: Agent) -> None:
        pass

    async def session_update(self, session_id: str, update: SessionUpdate, **kwargs: Any) -> None:
        show = self._transcript
        if isinstance(update, AgentMessageChunk):
            show.chunk("agent", update.message_id, block_text(update.content))
        elif isinstance(update, AgentThoughtChunk):
            show.chunk("thought", update.message_id, block_text(update.content))
        elif isinstance(update, UserMessageChunk):
            show.chunk("user", update.message_id, block_text(update.content))
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            self._show_tool(update)
        elif isinstance(update, AgentPlanUpdate):
            entries = [f"{PLAN_MARKS.get(e.status, '[?]')} {e.content}" for e in update.entries]
            show.line("plan", " | ".join(entries) or "(empty)")
        elif isinstance(update, UsageUpdate):
            cost = f", {update.cost.amount} {update.cost.currency}" if update.cost else ""
            show.line("usage", f"{update.used}/{update.size} tokens{cost}")
        else:
            show.line("update", update.session_update)

    def _show_tool(self, update: ToolCallStart | ToolCallProgress) -> None:
        if update.title:
            self._tools[update.tool_call_id] = update.title
        title = self._tools.get(update.tool_call_id, update.tool_call_id)
        kind = f" ({update.kind})" if isinstance(update, ToolCallStart) and update.kind else ""
        status = update.status or ("pending" if isinstance(update, ToolCallStart) else "updated")
        detail = tool_text(update)
        suffix = f" - {detail}" if detail else ""
        self._transcript.line("tool", f"{title}{kind}: {status}{suffix}")

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        title = tool_call.title or self._tools.get(tool_call.tool_call_id, tool_call.tool_call_id)
        ranked = sorted(
            options,
            key=lambda o: ALLOW_PREFERENCE.index(o.kind) if o.kind in ALLOW_PREFERENCE else 9,
        )
        if not ranked:
            self._transcript.line("permission", f"{title}: no options offered, cancelled")
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        choice = ranked[0]
        verdict = "allowed" if choice.kind in ALLOW_PREFERENCE else "rejected"
        self._transcript.line("permission", f"{title}: {verdict} ({choice.name})")
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice.option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        if not os.path.isabs(path):
            raise RequestError.invalid_params({"path": path, "details": "path must be absolute"})
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            self._transcript.line("fs", f"read {path}: not found")
            raise RequestError.resource_not_found(Path(path).as_uri()) from None
        except (OSError, UnicodeDecodeError) as exc:
            self._transcript.line("fs", f"read {path}: {exc}")
            raise RequestError.internal_error({"details": str(exc)}) from None
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        served = lines[start : start + limit if limit is not None else None]
        self._transcript.line("fs", f"read {path} ({len(served)} lines)")
        return ReadTextFileResponse(content="".join(served))

    # Not advertised in initialize, so the agent must not call these: "method not found".

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        raise RequestError.method_not_found("fs/write_text_file")

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        raise RequestError.method_not_found("terminal/kill")

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def prompt_blocks(text: str, file_path: str | None) -> list[ContentBlock]:
    blocks: list[ContentBlock] = [text_block(text)]
    if file_path is not None:
        path = Path(file_path)
        blocks.append(resource_link_block(path.name, path.as_uri()))
    return blocks


async def talk(
    conn: Agent, transcript: Transcript, prompts: list[str], file_path: str | None
) -> bool:
    """Initialize, open a session and send every prompt; False when the agent stops making sense."""
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=False), terminal=False
        ),
        client_info=Implementation(
            name=CLIENT_NAME, title="acp-proxy demo client", version=demo_version()
        ),
    )
    info = init.agent_info
    who = f"{info.name} {info.version}" if info else "an unnamed agent"
    transcript.line("connected", f"{who}, protocol {init.protocol_version}")
    if init.protocol_version != PROTOCOL_VERSION:
        transcript.line("error", f"this client speaks only protocol {PROTOCOL_VERSION}")
        return False
    session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
    transcript.line("session", session.session_id)
    for text in prompts:
        attached = f" [attached {file_path}]" if file_path else ""
        transcript.line("you", text + attached)
        response = await conn.prompt(
            session_id=session.session_id, prompt=prompt_blocks(text, file_path)
        )
        transcript.line("stop", response.stop_reason)
    return True


async def run_demo_client(
    agent_argv: list[str],
    prompts: list[str],
    file_path: str | None,
    out: TextIO,
    *,
    timeout: float = 60.0,
    shutdown_timeout: float = 5.0,
) -> int:
    """Run the demo conversation against ``agent_argv``; returns the process exit status to use.

    ``timeout`` bounds the whole conversation (not the shutdown, which has its own).
    """
    if not agent_argv:
        raise ValueError("agent_argv must name the agent command")
    absolute = os.path.abspath(file_path) if file_path is not None else None
    prompts = prompts or [DEFAULT_PROMPT_WITH_FILE if absolute else DEFAULT_PROMPT]
    transcript = Transcript(out)
    transport = {"stderr": None, "shutdown_timeout": shutdown_timeout}
    ok = False
    try:
        async with spawn_agent_process(
            DemoClient(transcript),
            agent_argv[0],
            *agent_argv[1:],
            env=dict(os.environ),
            transport_kwargs=transport,
        ) as (conn, process):
            try:
                async with asyncio.timeout(timeout):
                    ok = await talk(conn, transcript, prompts, absolute)
            except TimeoutError:
                transcript.line("error", f"the conversation did not finish within {timeout}s")
            except Exception as exc:  # any failure of the agent: report it, exit non-zero
                transcript.line("error", f"{type(exc).__name__}: {exc}")
    except OSError as exc:
        transcript.line("error", f"cannot start {agent_argv[0]}: {exc}")
        return 1
    if process.returncode != 0:
        transcript.line("error", f"the agent exited with status {process.returncode}")
        return 1
    return 0 if ok else 1


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m acp_proxy.demo.client",
        usage="%(prog)s [--prompt TEXT ...] [--file PATH] -- AGENT_CMD [ARGS...]",
        description="Drive an ACP agent through a demo conversation and print the transcript.",
    )
    parser.add_argument("--prompt", action="append", default=[], help="a prompt (repeatable)")
    parser.add_argument("--file", help="a file to attach to every prompt")
    if "--" not in argv:
        parser.error("give the agent command after --")
    split = argv.index("--")
    options = parser.parse_args(argv[:split])
    agent_argv = argv[split + 1 :]
    if not agent_argv:
        parser.error("give the agent command after --")
    return options, agent_argv


def main(argv: list[str] | None = None) -> int:
    options, agent_argv = parse_args(sys.argv[1:] if argv is None else argv)
    return asyncio.run(run_demo_client(agent_argv, options.prompt, options.file, sys.stdout))


if __name__ == "__main__":
    raise SystemExit(main())
