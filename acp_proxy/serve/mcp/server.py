"""The MCP server: ``library``'s work as tools on the official ``mcp`` SDK, over stdio.

Rules:
- The only module that imports ``mcp``. Each tool is a thin call into ``Library``; a
  ``ToolMistake`` becomes the SDK's ``ToolError`` (an error result the model reads), anything
  else the SDK's generic failure (logged on stderr, never shown to the model).
- Every result passes ``Library.verified`` (redaction checked afresh) before it is returned.
- Every tool is annotated read-only, idempotent, not destructive and closed-world.
- Tools run on the SDK's worker threads, never on its event loop. They read the shared
  SQLite connections one at a time (``Library.lock``); ``search`` takes that lock itself
  only around its short steps, so other tools answer while it scans.
- ``INSTRUCTIONS`` tell a model where to start and how references, paging and redaction work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from acp_proxy import __version__
from acp_proxy.errors import UnreadableRecording
from acp_proxy.serve.mcp.library import Library, ToolMistake

INSTRUCTIONS = """\
Recordings of Agent Client Protocol (ACP) conversations between a client (an editor) and a
coding agent, made by acp-proxy. Read-only.

Where to start: list_recordings (newest first; filter by since, label, agent, status), then
recording_summary(ref) for one recording: agent and client, capabilities, sessions, prompt
turns and stop reasons, error responses, spec findings and latency by method, with what to
look at next. To find something across recordings, search(pattern). To explain a slow call,
method_stats(ref) then frames(ref, method=...) and frame(ref, seq). To see what the user saw,
conversation(ref, turn). check(ref) lists spec violations with fixes; diff(a, b) finds the
first place two recordings diverge.

A ref is a recording id (from list_recordings), a label, a session id, or "last". Frames are
numbered by seq within a recording. Results are bounded: when a result has "next", pass that
value back (as before, after_seq, after or offset, as its hint says) for the next page.
{redaction}"""

REDACTED = (
    "Secrets are redacted: API keys, tokens, passwords, e-mail addresses and the user's home "
    "folder appear as [redacted:KIND:N] placeholders (the same value always gets the same "
    "placeholder within a recording)."
)
NOT_REDACTED = "Nothing is redacted: results may hold secrets; do not copy them anywhere."

READ_ONLY = ToolAnnotations(
    read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False
)

Ref = Annotated[str, Field(description='A recording id, label, session id or "last".')]
Limit = Annotated[int, Field(ge=1, le=200, description="At most this many items.")]
Since = Annotated[
    str | None, Field(description="Only since: 2h, 3d, today, yesterday, or an ISO date/time.")
]
Method = Annotated[str | None, Field(description="A method name or glob, e.g. 'session/*'.")]
Direction = Annotated[
    str | None, Field(description="c2a (client to agent), a2c (agent to client) or stderr.")
]
Result = dict[str, Any]
KIND = (
    "request, notification, response, error, stderr, or an update kind such as tool_call or "
    "agent_message_chunk."
)
REGEX = (
    "pattern is a regular expression (RE2 syntax: no backreferences or lookaround), matched "
    "against the raw JSON line."
)


def build_server(library: Library) -> MCPServer:
    """An MCP server whose tools read ``library``."""
    redaction = REDACTED if library.copies.redacting else NOT_REDACTED
    server: MCPServer = MCPServer(
        name="acp-proxy",
        title="acp-proxy recordings",
        version=__version__,
        instructions=INSTRUCTIONS.format(redaction=redaction),
        log_level="WARNING",
    )

    def call(work: Callable[[], Result], *, exclusive: bool = True) -> Result:
        try:
            if not exclusive:
                return library.verified(work())
            with library.lock:
                return library.verified(work())
        except (ToolMistake, UnreadableRecording) as error:  # a damaged file: said, not a crash
            raise ToolError(str(error)) from error

    def tool(title: str) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
        return server.tool(title=title, annotations=READ_ONLY, structured_output=True)

    @tool("List recordings")
    def list_recordings(
        since: Since = None,
        label: Annotated[str | None, Field(description="Part of the label.")] = None,
        agent: Annotated[str | None, Field(description="Part of the agent's name.")] = None,
        status: Annotated[
            str | None, Field(description="running, exited, spawn_failed ...")
        ] = None,
        limit: Limit = 20,
        before: Annotated[
            str | None, Field(description="Page: recordings older than this (a result's next).")
        ] = None,
    ) -> Result:
        """Recorded conversations, newest first (by start): id, label, start, agent, client,
        frames, prompt turns, error responses, how the agent ended."""
        return call(lambda: library.list_recordings(since, label, agent, status, limit, before))

    @tool("Summary of a recording")
    def recording_summary(ref: Ref = "last") -> Result:
        """One recording at a glance: agent and client info and capabilities, sessions, prompt
        turns with stop reasons, error responses, spec findings, latency by method."""
        return call(lambda: library.recording_summary(ref))

    @tool("Frames of a recording")
    def frames(
        ref: Ref = "last",
        session: Annotated[str | None, Field(description="Only this session id.")] = None,
        method: Method = None,
        kind: Annotated[str | None, Field(description=KIND)] = None,
        direction: Direction = None,
        after_seq: Annotated[int, Field(ge=0, description="Page: frames after this seq.")] = 0,
        limit: Limit = 50,
    ) -> Result:
        """Frames in order, as `acp-proxy show --json` gives them (large ones cut: frame()
        shows them whole)."""
        return call(lambda: library.frames(ref, session, method, kind, direction, after_seq, limit))

    @tool("One frame and its pair")
    def frame(
        ref: Ref,
        seq: Annotated[int, Field(ge=1, description="The frame's seq.")],
        offset: Annotated[int, Field(ge=0, description="Page: body characters to skip.")] = 0,
    ) -> Result:
        """One frame whole (its JSON body paged by offset), with the request it answers or
        the response that answered it, and the latency between them."""
        return call(lambda: library.frame(ref, seq, offset))

    @tool("Search recordings")
    def search(
        pattern: Annotated[str, Field(description="Text to find (taken literally).")],
        regex: Annotated[bool, Field(description=REGEX)] = False,
        ignore_case: Annotated[bool, Field(description="regex only: ignore case.")] = False,
        refs: Annotated[list[str] | None, Field(description="Only these recordings.")] = None,
        method: Method = None,
        direction: Direction = None,
        since: Since = None,
        limit: Limit = 20,
        after: Annotated[int, Field(ge=0, description="Page: the last result's next.")] = 0,
    ) -> Result:
        """Frames containing the text (case- and accent-insensitive, words in order) across
        every recording, oldest first, each with recording id, seq, method and a snippet."""
        return call(
            lambda: library.search(
                pattern, regex, ignore_case, refs, method, direction, since, limit, after
            ),
            exclusive=False,
        )

    @tool("Spec findings")
    def check(
        ref: Ref = "last",
        select: Annotated[list[str] | None, Field(description="Only these rules.")] = None,
        ignore: Annotated[list[str] | None, Field(description="Not these rules.")] = None,
        offset: Annotated[int, Field(ge=0, description="Page: findings to skip.")] = 0,
    ) -> Result:
        """What `acp-proxy check` finds in one recording: each finding's rule, severity,
        frame, message, fix and the spec text it comes from."""
        return call(lambda: library.check(ref, select or (), ignore or (), offset))

    @tool("Diff two recordings")
    def diff(
        a: Ref,
        b: Ref,
        strict: Annotated[bool, Field(description="Compare raw bytes.")] = False,
        ignore: Annotated[
            list[str] | None, Field(description="JSON paths to leave out, e.g. '$..usage'.")
        ] = None,
    ) -> Result:
        """The first divergence between two recordings (or sessions) message by message, as
        `acp-proxy diff --format json` reports it (ids and timestamps normalized)."""
        return call(lambda: library.diff(a, b, strict, ignore or ()))

    @tool("Conversation as Markdown")
    def conversation(
        ref: Ref = "last",
        turn: Annotated[
            int | None, Field(ge=1, description="Prompt turn number (1 = first); all if left out.")
        ] = None,
        offset: Annotated[int, Field(ge=0, description="Page: characters to skip.")] = 0,
    ) -> Result:
        """The conversation as the user saw it (messages, tool calls, permissions, plans), as
        Markdown: one prompt turn or the whole recording."""
        return call(lambda: library.conversation(ref, turn, offset))

    @tool("Latency by method")
    def method_stats(ref: Ref = "last") -> Result:
        """Per JSON-RPC method and direction: calls, error responses, unanswered, and p50,
        p95, p99 and max latency (nearest-rank percentiles, as `stats --by-method`)."""
        return call(lambda: library.method_stats(ref))

    del list_recordings, recording_summary, frames, frame, search, check, diff
    del conversation, method_stats
    return server
