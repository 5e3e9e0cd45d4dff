"""Markdown of a transcript: the conversation as the user saw it.

Rules:
- Pure: a ``TranscriptView`` (and optionally its ``ConnectionRow``) in, text out.
- Recorded text is data: a Markdown renderer shows it as the text that was sent, never as
  markup. Prose (messages, titles, notices, answers) is escaped (``text``: every character that
  could start emphasis, a link, an image, raw HTML, an entity or a block is backslash-escaped);
  ids, paths, outputs and JSON go in code spans or fenced blocks whose fence is longer than any
  backtick run inside, so nothing breaks the page. The only links are resource links whose URI
  has a safe scheme (``LINK_SCHEMES``); any other URI is shown as text.
- The page is then made safe for a terminal (``display.visible``, newlines kept): Markdown goes
  to stdout as often as to a file.
- One section per session, the turns in order; live notices are marked as such; timings are
  left out with ``timings=False`` (stable output for comparisons).
"""

from __future__ import annotations

import re
from typing import Any

from acp_proxy.display import visible
from acp_proxy.inspect.render import words as present
from acp_proxy.inspect.transcript import values as tv
from acp_proxy.store.values import ConnectionRow

ROLE_TITLES = {"user": "You", "agent": "Agent", "thought": "Thought", "session": "Session message"}


LINK_SCHEMES = ("http", "https", "file", "mailto")
_INLINE_MARKUP = re.compile(r"([\\`*\[\]<>&~|])")
# An underscore between two letters or digits can neither open nor close emphasis.
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_BLOCK_START = re.compile(r"^([ \t]*)(?:([#>+=-])|(\d+)([.)]))", re.MULTILINE)
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")


def _block_marker(match: re.Match[str]) -> str:
    indent, marker, digits, after = match.groups()
    return f"{indent}\\{marker}" if marker else f"{indent}{digits}\\{after}"


def text(value: Any) -> str:
    """Recorded prose as Markdown that renders as exactly that text (see the module rules)."""
    value = value if isinstance(value, str) else present.to_json(value)
    value = _UNDERSCORE.sub(r"\\_", _INLINE_MARKUP.sub(r"\\\1", value))
    return _BLOCK_START.sub(_block_marker, value)


def link(label: str, uri: Any) -> str:
    """A link to ``uri`` if its scheme is safe and it fits a link destination, else text."""
    if isinstance(uri, str):
        scheme = _SCHEME.match(uri)
        unsafe = set(uri) & set("<>\n\r") or not uri.isprintable()
        if scheme and scheme.group(1).lower() in LINK_SCHEMES and not unsafe:
            return f"[{text(label)}](<{uri}>)"
    return f"{text(label)} ({code(str(uri))})"


def _block(block: Any) -> str:
    if isinstance(block, dict) and block.get("type") == "resource_link":
        return link(str(block.get("name") or block.get("uri")), block.get("uri"))
    return text(present.block_text(block))


def content(value: Any) -> str:
    """A content list (or block) as Markdown: text escaped, resource links safe."""
    return present.content_text(value, _block)


def code(text: str) -> str:
    """An inline code span that holds ``text`` whatever backticks it contains."""
    text = text.replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, info: str = "") -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    ticks = "`" * (longest + 1)
    return f"{ticks}{info}\n{text.rstrip(chr(10))}\n{ticks}"


def quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.splitlines() or [""])


class _Page:
    def __init__(self, timings: bool) -> None:
        self.timings = timings
        self.parts: list[str] = []

    def add(self, *blocks: str) -> None:
        self.parts.extend(blocks)

    def took(self, ns: int | None, prefix: str = "") -> str:
        return f"{prefix}{present.duration(ns)}" if self.timings and ns is not None else ""


def render_markdown(
    view: tv.TranscriptView, connection: ConnectionRow | None = None, *, timings: bool = True
) -> str:
    page = _Page(timings)
    _header(page, view, connection)
    for session in view.sessions:
        _session(page, session)
    problems = [e for e in view.events if isinstance(e, tv.Malformed)]
    if problems:
        page.add(
            "## Frames that were not JSON-RPC",
            *(f"- frame {p.seq} ({p.direction}): {text(p.reason)}" for p in problems),
        )
    return visible("\n\n".join(page.parts), lines=True) + "\n"


def _version(view: tv.TranscriptView) -> str:
    return "unknown" if view.protocol_version is None else str(view.protocol_version)


def _header(page: _Page, view: tv.TranscriptView, connection: ConnectionRow | None) -> None:
    title = "ACP conversation"
    argv = connection.argv if connection else None
    client_argv = connection.client_argv if connection else None
    facts = [
        f"- Agent: {text(present.peer(view.agent_info, argv))}",
        f"- Client: {text(present.peer(view.client_info, client_argv))}",
        f"- Protocol version: {_version(view)}",
    ]
    if connection is not None:
        label = f" ({text(connection.label)})" if connection.label else ""
        title = f"ACP conversation: connection {connection.id}{label}"
        when = present.wall(connection.started_ns) if page.timings else "-"
        length = page.took(
            None if connection.ended_ns is None else connection.ended_ns - connection.started_ns,
            ", ",
        )
        facts.append(f"- Recorded: {when}{length}; agent {connection.ending}")
    facts.append(f"- Frames: {view.frames} ({view.stderr_lines} agent stderr lines)")
    page.add(f"# {title}", "\n".join(facts))


def _session(page: _Page, session: tv.SessionView) -> None:
    opened = f" (opened by {code(session.opened_by)})" if session.opened_by else ""
    page.add(f"## Session {code(session.session_id)}{opened}")
    if session.info.get("title"):
        page.add(f"Title: {text(session.info['title'])}")
    for item in session.timeline:
        _item(page, session, item)
    tail = []
    if session.usage is not None:
        tail.append(f"- Context usage: {text(present.usage_text(session.usage))}")
    if session.mode:
        tail.append(f"- Mode: {code(session.mode)}")
    if isinstance(session.commands, list):
        names = [code("/" + str(c.get("name"))) for c in session.commands if isinstance(c, dict)]
        tail.append(f"- Commands: {', '.join(names) or 'none'}")
    if isinstance(session.config_options, list):
        ids = [
            code(str(o.get("id", o.get("name", "?"))))
            for o in session.config_options
            if isinstance(o, dict)
        ]
        tail.append(f"- Config options: {', '.join(ids) or 'none'}")
    if session.state:
        tail.append(f"- Last state: {code(session.state)}")
    if tail:
        page.add("### Session state", "\n".join(tail))


def _item(page: _Page, session: tv.SessionView, item: tv.Item) -> None:
    if isinstance(item, tv.TurnMark):
        _turn_mark(page, session.turns[item.turn], item.end)
    elif isinstance(item, tv.Message):
        title = ROLE_TITLES.get(item.role, item.role)
        body = content(item.content) or "_(empty)_"
        if item.role == "thought":
            page.add(f"**{title}**", quote(body))
        else:
            extra = ""
            if item.role == "session":
                who = [
                    f"{k[:-9]}: {code(str(v))}"
                    for k, v in item.fields.items()
                    if k in ("senderSessionId", "recipientSessionId")
                ]
                extra = f" ({', '.join(who)})" if who else ""
            page.add(f"**{title}**{extra}", body)
    elif isinstance(item, tv.ToolCall):
        _tool_call(page, item)
    elif isinstance(item, tv.Plan):
        lines = [f"- {_plan_line(e)}" for e in item.entries] or [
            fence(present.to_json(dict(item.body), pretty=True), "json")
        ]
        page.add(f"**Plan**{' ' + code(item.plan_id) if item.plan_id else ''}", "\n".join(lines))
    elif isinstance(item, tv.Permission):
        _permission(page, item)
    elif isinstance(item, tv.Notice):
        detail = f": {item.description}" if item.description else ""
        page.add(
            f"> **Notice** ({text(item.severity or 'info')}, live, not history): "
            f"{text(item.title or '')}{text(detail)}"
        )
    elif isinstance(item, tv.Terminal):
        fields = item.fields
        command = f" {code(str(fields['command']))}" if fields.get("command") else ""
        status = fields.get("exitStatus")
        ended = f", exited {present.to_json(status)}" if status else ""
        page.add(
            f"**Terminal** {code(item.terminal_id)}{command}{ended}",
            fence(item.output.decode(errors="replace")),
        )
    elif isinstance(item, tv.Compaction):
        error = f": {text(item.fields['error'])}" if item.fields.get("error") else ""
        status = text(item.status or "unknown")
        page.add(f"**Context compaction** {code(item.compaction_id)}: {status}{error}")
        if item.summary:
            page.add(quote(content(item.summary)))
    elif isinstance(item, tv.Subagent):
        state = item.fields.get("state")
        state_word = state.get("state") if isinstance(state, dict) else state
        title = f" {text(item.fields['title'])}" if item.fields.get("title") else ""
        state_text = text(state_word or "unknown state")
        page.add(f"**Subagent** {code(item.session_id)}{title}: {state_text}")
    elif isinstance(item, tv.Call):
        _call(page, item)
    elif isinstance(item, tv.UnknownUpdate):
        page.add(
            f"**Update** {code(item.kind)} (not known to acp-proxy, kept verbatim)",
            fence(present.to_json(item.update, pretty=True), "json"),
        )


def _plan_line(entry: Any) -> str:
    if not isinstance(entry, dict):
        return code(present.to_json(entry))
    mark = present.PLAN_MARKS.get(str(entry.get("status")), "[?]")
    priority = f" ({text(entry['priority'])})" if entry.get("priority") else ""
    return f"{mark} {text(entry.get('content', ''))}{priority}"


def _turn_mark(page: _Page, turn: tv.PromptTurn, end: bool) -> None:
    if not end:
        page.add(f"### Turn {turn.index + 1}")
        return
    if turn.error is not None:
        page.add(f"**Prompt refused**: {code(present.to_json(turn.error))}")
        return
    parts = [f"**Turn ended: {text(turn.stop_reason or 'no stop reason')}**"]
    if page.timings:
        parts.append(f"after {present.since(turn.started_ns, turn.end_ns)}")
        if turn.first_output_ns is not None:
            parts.append(
                f"(first agent text after {present.since(turn.started_ns, turn.first_output_ns)})"
            )
    if turn.usage is not None:
        parts.append(f"- usage {text(present.usage_text(turn.usage))}")
    page.add(" ".join(parts))


def _tool_call(page: _Page, tool: tv.ToolCall) -> None:
    kind = tool.fields.get("kind")
    head = f"**Tool call** {code(tool.title)}: {text(tool.status or 'no status')}" + (
        f" ({text(kind)})" if kind else ""
    )
    lines = [head]
    locations = tool.fields.get("locations")
    for location in locations if isinstance(locations, list) else []:
        if isinstance(location, dict) and location.get("path"):
            lines.append(f"- {code(str(location['path']))}")
    page.add("\n".join(lines))
    if tool.content:
        page.add(fence("\n\n".join(present.tool_content_text(c) for c in tool.content)))


def _permission(page: _Page, permission: tv.Permission) -> None:
    params: Any = permission.params
    tool = params.get("toolCall") if isinstance(params, dict) else None
    title = params.get("title") if isinstance(params, dict) else None
    if not title and isinstance(tool, dict):
        title = tool.get("title") or tool.get("toolCallId")
    options = params.get("options") if isinstance(params, dict) else None
    answer = text(present.permission_answer(permission.outcome, permission.error, options))
    waited = page.took(permission.wait_ns, ", waited ")
    page.add(
        f"**Permission asked**: {code(str(title or 'permission'))} - "
        f"options: {text(present.option_names(options))}\n"
        f"Answer: **{answer}**{waited}"
    )


def _call(page: _Page, call: tv.Call) -> None:
    params = call.params if isinstance(call.params, dict) else {}
    subject = params.get("path") or params.get("command") or params.get("terminalId")
    about = f" {code(str(subject))}" if subject else ""
    arrow = "->" if call.caller == "client" else "<-"
    if call.notification:
        outcome = "notification"
    elif call.error is not None:
        number = call.error.get("code") if isinstance(call.error, dict) else ""
        outcome = text(f"error {number}".rstrip())
    else:
        outcome = "answered" if call.answered_seq is not None else "no answer"
    page.add(
        f"_{text(call.caller)} {arrow} {code(call.method)}{about}: "
        f"{outcome}{page.took(call.latency_ns, ', ')}_"
    )
