"""Terminal text for the inspecting commands: frame lines, connection lists, turn stats.

Rules:
- Pure formatting: values in, strings out (styled with ANSI codes; ``click.echo`` drops
  the colour when the output is not a terminal).
- One frame is one line (``frame_line``), so ``show`` and ``tail`` stream and ``grep`` works
  on their output. Previews (preview.py, the same words as the inspector's) are cut at
  ``PREVIEW`` characters (on a terminal, to what its width leaves) and never contain a newline.
- ``frame_json`` is the machine-readable form of a frame (``--json``): one object per line.
- A remote connection's frame says which stream carried it (words.carrier_tag, after the
  direction; ``stream``, ``exchange``, ``http_method``, ``http_status`` in its JSON); a stdio
  frame's line and record are unchanged.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

import orjson

from acp_proxy.display import json_visible, visible
from acp_proxy.inspect.render import words as present
from acp_proxy.inspect.render.preview import cut, frame_preview, one_line
from acp_proxy.inspect.render.style import style
from acp_proxy.plural import counted, noun
from acp_proxy.protocol.decode import json_or_none
from acp_proxy.store.values import ConnectionRow, FrameRow

if TYPE_CHECKING:
    from acp_proxy.inspect.transcript.values import PromptTurn

PREVIEW = 100
MIN_PREVIEW = 8  # narrower than this, a preview says nothing: the line goes without
CARRIER = 14  # a remote frame's stream tag, padded so that the kinds after it line up
_SGR = re.compile(r"\x1b\[[0-9;]*m")
DIRECTION_STYLE = {"c2a": ("c2a", "cyan"), "a2c": ("a2c", "green"), "stderr": ("err", "yellow")}
KIND_COLOURS = {"error": "red", "unparseable": "red", "invalid": "red", "response": "blue"}


def _cut(text: str, width: int = PREVIEW) -> str:
    return visible(cut(one_line(text), width))


def preview(frame: FrameRow) -> str:
    """A short description of what the frame says, beyond its kind and method (preview.py)."""
    return _cut(frame_preview(frame.raw, frame.direction, frame.kind))


def _visible(parts: list[str]) -> int:
    return cells(_SGR.sub("", " ".join(parts)))


def _cell(char: str) -> int:
    """Columns ``char`` takes on a terminal: 2 for East Asian wide, 0 for combining marks."""
    if char < "\u0300":
        return 1
    import unicodedata  # only for text that is not plain Latin

    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cells(text: str) -> int:
    """The columns ``text`` (without escape codes) takes on a terminal."""
    return len(text) if text.isascii() else sum(_cell(c) for c in text)


def _within(text: str, room: int) -> str:
    """The longest start of ``text`` that takes at most ``room`` columns."""
    used = 0
    for index, char in enumerate(text):
        used += _cell(char)
        if used > room:
            return text[:index]
    return text


def fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` terminal columns (wide characters count two; its SGR codes
    kept, a reset after a cut)."""
    if cells(_SGR.sub("", line)) <= width:
        return line
    room = max(width - 1, 0)  # the ellipsis takes the last column
    out: list[str] = []
    position = 0
    pieces = [(m.start(), m.end()) for m in _SGR.finditer(line)] + [(len(line), len(line))]
    for start, end in pieces:
        text = line[position:start]
        taken = _within(text, room)
        out.append(taken)
        room -= cells(taken)
        if len(taken) < len(text):
            break
        out.append(line[start:end])
        position = end
    return "".join(out) + "…\x1b[0m"


def frame_line(frame: FrameRow, first_ns: int | None, width: int | None = None) -> str:
    """One frame on one line; with ``width`` (a terminal's), the preview is cut to fit it."""
    elapsed = (frame.mono_ns - first_ns) / 1e9 if first_ns is not None else 0.0
    label, colour = DIRECTION_STYLE.get(frame.direction, (frame.direction, "white"))
    kind = style(f"{frame.kind:<12}", fg=KIND_COLOURS.get(frame.kind))
    parts = [f"{frame.seq:>7}", f"{elapsed:>+9.3f}s", style(label, fg=colour)]
    if frame.carrier is not None:  # a remote frame: which stream carried it
        parts.append(style(f"{visible(present.carrier_tag(frame.carrier)):<{CARRIER}}", dim=True))
    parts.append(kind)
    if frame.method is not None:
        parts.append(style(visible(frame.method), bold=True))
    if frame.rpc_id is not None:
        rpc_id = repr(frame.rpc_id) if isinstance(frame.rpc_id, str) else str(frame.rpc_id)
        parts.append(f"[{visible(rpc_id)}]")
    if frame.update_kind is not None:
        parts.append(style(visible(frame.update_kind), fg="magenta"))
    if frame.stop_reason is not None:
        parts.append(style(visible(frame.stop_reason), fg="yellow"))
    if frame.latency_ns is not None:
        parts.append(style(present.duration(frame.latency_ns), fg="cyan"))
    flags = [style(",".join(frame.flags), fg="red")] if frame.flags else []
    text = preview(frame)
    if text and width is not None:
        room = width - _visible(parts + flags) - 1
        text = _cut(text, room) if room >= MIN_PREVIEW else ""
    if text:
        parts.append(style(text, dim=True))
    line = " ".join(parts + flags)
    return line if width is None else fit(line, width)


def frame_json(frame: FrameRow, first_ns: int | None) -> str:
    record: dict[str, Any] = {
        "seq": frame.seq, "direction": frame.direction, "time_ns": frame.wall_ns,
        "elapsed_ms": None if first_ns is None else (frame.mono_ns - first_ns) / 1e6,
        "kind": frame.kind, "rpc_id": frame.rpc_id, "method": frame.method,
        "session_id": frame.session_id, "update_kind": frame.update_kind,
        "request_seq": frame.request_seq, "stop_reason": frame.stop_reason,
        "error_code": frame.error_code,
        "latency_ms": None if frame.latency_ns is None else frame.latency_ns / 1e6,
        "flags": list(frame.flags),
    }  # fmt: skip
    if frame.carrier is not None:  # a remote frame (stdio frames keep their record as it was)
        record.update(
            stream=frame.carrier.stream, exchange=frame.carrier.exchange,
            http_method=frame.carrier.method, http_status=frame.carrier.status,
        )  # fmt: skip
    value = json_or_none(frame.raw) if frame.kind != "stderr" else None
    if value is not None:
        record["message"] = value
    else:
        try:
            record["text"] = frame.raw.decode()
        except UnicodeDecodeError:
            record["raw_base64"] = base64.b64encode(frame.raw).decode()
    return json_visible(orjson.dumps(record).decode())


def pretty_body(frame: FrameRow) -> str:
    value = json_or_none(frame.raw) if frame.kind != "stderr" else None
    body = (
        present.to_json(value, pretty=True)
        if value is not None
        else frame.raw.decode(errors="replace")
    )
    body = visible(body, lines=True)
    return "\n".join("    " + line for line in body.rstrip("\n").split("\n"))


def connection_line(
    row: ConnectionRow, frames: int, prompts: int, errors: int, duration_ns: int | None
) -> str:
    label = f" {style(visible(row.label), fg='cyan')}" if row.label else ""
    ending = row.ending
    ending_style = style(visible(ending), fg="green" if ending in ("exit 0", "running") else "red")
    problems = style(f", {counted(errors, 'error')}", fg="red") if errors else ""
    if incomplete(row):
        problems += style(f", incomplete: {counted(row.frames_lost, 'frame')} lost", fg="red")
    carried = transport_words(row)
    carried = f"{style(visible(carried), fg='magenta')}  " if carried else ""
    agent = present.peer(row.agent_info, row.argv)
    if row.remote_url and not isinstance(row.agent_info, dict):
        agent = row.remote_url  # a remote agent that sent no agentInfo is named by its URL
    return (
        f"{style(str(row.id), bold=True):>4}{label}  {present.wall(row.started_ns)}  "
        f"{visible(agent)} <- "
        f"{visible(present.peer(row.client_info, row.client_argv))}  "
        f"v{row.protocol_version if row.protocol_version is not None else '?'}  {carried}"
        f"{counted(frames, 'frame')}  {counted(prompts, 'turn')}  {present.duration(duration_ns)}  "
        f"{ending_style}{problems}"
    )


def transport_words(row: ConnectionRow) -> str:
    """How a connection was carried, in words; "" for a plain stdio one."""
    if row.remote:
        source = f" from {row.client_address}" if row.client_address else ""
        return f"{row.transport}{source}"
    if row.remote_url:
        return "stdio bridge"
    return ""


def incomplete(row: ConnectionRow) -> bool:
    """Whether the recording of ``row`` lost frames (docs/recording-format.md)."""
    return bool(row.frames_lost) or row.status == "incomplete"


def incomplete_note(row: ConnectionRow) -> str:
    """One line saying what an incomplete recording lost and why (control characters shown)."""
    why = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in row.error or "")
    return (
        f"connection {row.id} is incomplete: {counted(row.frames_lost, 'frame')} "
        f"{noun(row.frames_lost, 'was', 'were')} not recorded" + (f" ({why})" if why else "")
    )


STATS_HEADER = (
    "session", "turn", "accepted", "first text", "duration", "tools", "permissions", "waited",
    "stop", "usage",
)  # fmt: skip


def turn_stats(turn: PromptTurn) -> tuple[str, ...]:
    accepted = (
        present.since(turn.started_ns, turn.response_ns)
        if turn.end_seq != turn.response_seq
        else "-"
    )
    cells = (
        turn.session_id, str(turn.index + 1), accepted,
        present.since(turn.started_ns, turn.first_output_ns),
        present.since(turn.started_ns, turn.end_ns), str(len(turn.tool_calls)),
        str(turn.permissions),
        present.duration(turn.permission_wait_ns) if turn.permissions else "-",
        turn.stop_reason or turn.status, present.usage_text(turn.usage) if turn.usage else "-",
    )  # fmt: skip
    return tuple(visible(str(cell)) for cell in cells)


def _ms(start: int | None, end: int | None) -> float | None:
    return None if start is None or end is None else (end - start) / 1e6


def turn_record(turn: PromptTurn) -> dict[str, Any]:
    """One prompt turn for ``stats --json``."""
    accepted = turn.response_seq != turn.end_seq  # v1 (and refusals): the answer is the end
    return {
        "session_id": turn.session_id, "turn": turn.index + 1, "prompt_seq": turn.prompt_seq,
        "status": turn.status, "stop_reason": turn.stop_reason,
        "accepted_ms": _ms(turn.started_ns, turn.response_ns) if accepted else None,
        "first_text_ms": _ms(turn.started_ns, turn.first_output_ns),
        "duration_ms": _ms(turn.started_ns, turn.end_ns), "tool_calls": len(turn.tool_calls),
        "permissions": turn.permissions, "permission_wait_ms": turn.permission_wait_ns / 1e6,
        "usage": turn.usage,
    }  # fmt: skip


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(style(h.ljust(w), bold=True) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines
