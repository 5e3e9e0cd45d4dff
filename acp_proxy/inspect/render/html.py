"""HTML export: one self-contained page with the conversation and the frame-by-frame timeline.

Rules:
- Recorded content is data, never markup: every string a peer sent goes through ``_e``
  (``html.escape`` with quotes), so ``<script>`` or ``<img onerror>`` shows as text; control
  characters are shown as escapes first (``display.visible``), since the page may be written
  to a terminal.
- The page fetches nothing and runs nothing: styles are inline, there is no script, and a
  Content-Security-Policy (``default-src 'none'``) forbids both should anything slip through.
- Streams: ``render_html`` yields pieces; the timeline is written frame by frame.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator
from typing import Any

from acp_proxy.display import visible
from acp_proxy.inspect.render import words as present
from acp_proxy.inspect.render.text import preview
from acp_proxy.inspect.transcript.values import (
    Call,
    Compaction,
    Item,
    Message,
    Notice,
    Permission,
    Plan,
    SessionView,
    Subagent,
    Terminal,
    ToolCall,
    TranscriptView,
    TurnMark,
    UnknownUpdate,
)
from acp_proxy.protocol.decode import json_or_none
from acp_proxy.store.values import ConnectionRow, FrameRow

CSP = "default-src 'none'; style-src 'unsafe-inline'"
STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:70rem;padding:1rem;color:#1d1d1f}
h1{font-size:1.5rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc}h3{font-size:1rem;color:#555}
.item{margin:.6rem 0;padding:.5rem .8rem;border-left:4px solid #ccc;background:#fafafa}
.user{border-color:#2f6fde}.agent{border-color:#1a9b50}.thought{border-color:#aaa;color:#555}
.tool{border-color:#c58a00}.permission{border-color:#9b1ab0}.notice{border-color:#d33}
.who{font-weight:600;font-size:.85rem;color:#555}.body{white-space:pre-wrap;word-break:break-word}
pre{white-space:pre-wrap;word-break:break-all;background:#f0f0f0;padding:.4rem;margin:.3rem 0}
table{border-collapse:collapse;width:100%;font-size:.85rem}
td,th{padding:2px 6px;vertical-align:top;text-align:left}
td:nth-child(2){white-space:nowrap}
tr.c2a td.dir{color:#2f6fde}tr.a2c td.dir{color:#1a9b50}tr.stderr td.dir{color:#c58a00}
tr:nth-child(even){background:#f6f6f6}tr:target{background:#fff3b0}
.frame{font-weight:400;font-size:.8em;margin-left:.5em}
.end{font-weight:600}code{background:#eee;padding:0 .2em}
"""
ROLE = {"user": "You", "agent": "Agent", "thought": "Thought", "session": "Session message"}


def _e(value: Any) -> str:
    text = value if isinstance(value, str) else present.to_json(value)
    return html.escape(visible(text, lines=True), quote=True)


LINK_SCHEMES = ("http://", "https://", "file://")  # a recorded javascript: URI stays text


def _box(css: str, who: str, body: str, seq: int | None = None) -> str:
    frame = f' <a class="frame" href="#f{seq}">frame {seq}</a>' if seq else ""
    return f'<div class="item {css}"><div class="who">{who}{frame}</div>{body}</div>\n'


def _seq(item: Any) -> int | None:
    """The frame an item was first seen in (its row in the frame table)."""
    for name in ("first_seq", "seq"):
        value = getattr(item, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _content(content: Any) -> str:
    """A content list with its resource links as links (safe schemes only)."""
    blocks = content if isinstance(content, list | tuple) else [content]
    parts: list[str] = []
    for block in blocks:
        uri = block.get("uri") if isinstance(block, dict) else None
        if (
            isinstance(block, dict)
            and block.get("type") == "resource_link"
            and isinstance(uri, str)
        ):
            name = block.get("name") or uri
            if uri.lower().startswith(LINK_SCHEMES):
                parts.append(f'<a href="{_e(uri)}" rel="noreferrer noopener">{_e(name)}</a>')
            else:
                parts.append(f"{_e(name)} (<code>{_e(uri)}</code>)")
            continue
        parts.append(_e(present.content_text([block])))
    return f'<div class="body">{" ".join(parts)}</div>'


def _text(text: str) -> str:
    return f'<div class="body">{_e(text)}</div>'


def render_html(
    view: TranscriptView,
    connection: ConnectionRow | None,
    frames: Iterable[FrameRow],
    first_ns: int | None,
) -> Iterator[str]:
    title = "ACP conversation" + (f": connection {connection.id}" if connection else "")
    if connection is not None and connection.label:
        title += f" ({connection.label})"
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>\n<h1>{_e(title)}</h1>\n"
    )
    argv = connection.argv if connection is not None else None
    client_argv = connection.client_argv if connection is not None else None
    facts = [
        ("Agent", present.peer(view.agent_info, argv)),
        ("Client", present.peer(view.client_info, client_argv)),
        ("Protocol version", str(view.protocol_version)), ("Frames", str(view.frames)),
    ]  # fmt: skip
    if connection is not None:
        facts.append(("Recorded", f"{present.wall(connection.started_ns)}, {connection.ending}"))
    yield "<ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in facts) + "</ul>\n"
    yield '<p><a href="#conversation">Conversation</a> · <a href="#frames">Frames</a></p>\n'
    yield '<section id="conversation"><h2>Conversation</h2>\n'
    for session in view.sessions:
        yield f"<h2>Session <code>{_e(session.session_id)}</code></h2>\n"
        for item in session.timeline:
            yield _item(session, item)
        if session.usage is not None:
            yield f"<p>Context usage: {_e(present.usage_text(session.usage))}</p>\n"
        if session.mode:
            yield f"<p>Mode: <code>{_e(session.mode)}</code></p>\n"
    yield '</section>\n<section id="frames"><h2>Frames</h2><table><thead><tr><th>seq</th>'
    yield "<th>time</th><th>dir</th><th>kind</th><th>method</th><th>what</th></tr></thead><tbody>\n"
    for frame in frames:
        yield _frame(frame, first_ns)
    yield "</tbody></table></section></body></html>\n"


def _item(session: SessionView, item: Item) -> str:
    if isinstance(item, TurnMark):
        turn = session.turns[item.turn]
        if not item.end:
            link = f' <a class="frame" href="#f{turn.prompt_seq}">frame {turn.prompt_seq}</a>'
            return f"<h3>Turn {turn.index + 1}{link}</h3>\n"
        took = present.since(turn.started_ns, turn.end_ns)
        stop = turn.stop_reason or ("refused" if turn.error is not None else "no stop reason")
        usage = f", usage {_e(present.usage_text(turn.usage))}" if turn.usage is not None else ""
        end = turn.end_seq or turn.response_seq
        link = f' <a class="frame" href="#f{end}">frame {end}</a>' if end else ""
        return f'<p class="end">Turn ended: {_e(stop)} after {_e(took)}{usage}{link}</p>\n'
    if isinstance(item, Message):
        return _box(
            item.role, _e(ROLE.get(item.role, item.role)), _content(item.content), _seq(item)
        )
    if isinstance(item, ToolCall):
        locations = item.fields.get("locations")
        paths = [
            f"<li><code>{_e(str(loc['path']))}</code>"
            + (f" line {_e(str(loc['line']))}" if loc.get("line") is not None else "")
            + "</li>"
            for loc in (locations if isinstance(locations, list) else [])
            if isinstance(loc, dict) and loc.get("path")
        ]
        body = f"<ul>{''.join(paths)}</ul>" if paths else ""
        body += "".join(f"<pre>{_e(present.tool_content_text(c))}</pre>" for c in item.content)
        kind = item.fields.get("kind")
        head = f"Tool call: {_e(item.title)} — {_e(item.status or 'no status')}" + (
            f" ({_e(kind)})" if isinstance(kind, str) else ""
        )
        return _box("tool", head, body, _seq(item))
    if isinstance(item, Plan):
        lines = "".join(f"<li>{_e(present.plan_line(e))}</li>" for e in item.entries)
        return _box("plan", "Plan", f"<ul>{lines}</ul>", _seq(item))
    if isinstance(item, Permission):
        params: Any = item.params if isinstance(item.params, dict) else {}
        tool = params.get("toolCall")
        title = params.get("title") or (tool.get("title") if isinstance(tool, dict) else None)
        answer = present.permission_answer(item.outcome, item.error, params.get("options"))
        body = _text(
            f"{title or 'Permission'}\nOptions: {present.option_names(params.get('options'))}"
            f"\nAnswer: {answer}"
        )
        return _box("permission", "Permission asked", body, _seq(item))
    if isinstance(item, Notice):
        return _box(
            "notice",
            f"Notice ({_e(item.severity or 'info')}, live)",
            _text(f"{item.title}: {item.description or ''}"),
        )
    if isinstance(item, Terminal):
        output = _pre(item.output.decode(errors="replace"))
        return _box("tool", f"Terminal {_e(item.terminal_id)}", output)
    if isinstance(item, Compaction):
        title = f"Compaction {_e(item.compaction_id)}: {_e(item.status or '?')}"
        return _box("thought", title, _text(present.content_text(item.summary)))
    if isinstance(item, Subagent):
        fields = _pre(present.to_json(dict(item.fields), pretty=True))
        return _box("tool", f"Subagent {_e(item.session_id)}", fields)
    if isinstance(item, UnknownUpdate):
        update = _pre(present.to_json(item.update, pretty=True))
        return _box("thought", f"Update {_e(item.kind)} (kept verbatim)", update)
    if isinstance(item, Call):
        outcome = (
            "error" if item.error is not None else ("sent" if item.notification else "answered")
        )
        return (
            f"<p><small>{_e(item.caller)}: <code>{_e(item.method)}</code> {outcome}</small></p>\n"
        )
    return ""


def _pre(text: str) -> str:
    return f"<pre>{_e(text)}</pre>"


def _frame(frame: FrameRow, first_ns: int | None) -> str:
    elapsed = "" if first_ns is None else f"{(frame.mono_ns - first_ns) / 1e6:.1f} ms"
    what = [_e(frame.update_kind or ""), _e(frame.stop_reason or ""), _e(preview(frame))]
    if frame.latency_ns is not None:
        what.insert(0, f"({_e(present.duration(frame.latency_ns))})")
    value = json_or_none(frame.raw)
    if value is None and frame.raw.strip() != b"null":  # not JSON, or too deep: the bytes
        body = frame.raw.decode(errors="replace")
    else:
        body = present.to_json(value, pretty=True)
    return (
        f'<tr id="f{frame.seq}" class="{_e(frame.direction)}">'
        f"<td>{frame.seq}</td><td>{elapsed}</td>"
        f'<td class="dir">{_e(frame.direction)}</td><td>{_e(frame.kind)}</td>'
        f"<td>{_e(frame.method or '')}</td><td>{' '.join(w for w in what if w)}"
        f"<details><summary>raw</summary><pre>{_e(body)}</pre></details></td></tr>\n"
    )
