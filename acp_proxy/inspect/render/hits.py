"""Search hits for people and programs: one line each, or one JSON object each.

Rules:
- Pure formatting. A snippet arrives (from store/search.py) with its matches between
  ``store.values.MARK_START`` and ``MARK_END``; on a terminal the match is shown bold red (as
  grep does), elsewhere between ``«`` and ``»`` so it stays visible in a file or a pipe.
- Recorded text is data: line breaks and tabs become spaces, every other control character
  is shown as ``display.visible`` shows it (an escape), so nothing recorded can move
  the cursor, change colours or reorder the text on a terminal.
- ``hit_record`` (``--json`` and the MCP server) gives the snippet without marks plus the
  ``[start, end)`` character spans of the matches in it.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.display import visible as terminal_visible
from acp_proxy.inspect.render.style import style
from acp_proxy.inspect.render.words import wall
from acp_proxy.store.values import MARK_END, MARK_START, Hit

OPEN, CLOSE = "«", "»"
_SPACES = {"\n": " ", "\r": " ", "\t": " "}


_SPACES_TABLE = str.maketrans(_SPACES)


def visible(text: str) -> str:
    """``text`` safe for a terminal: line breaks and tabs as spaces, the rest as ``visible``."""
    return terminal_visible(text.translate(_SPACES_TABLE))


def pieces(snippet: str) -> list[tuple[str, bool]]:
    """The snippet as (text, is_match) pieces, marks removed, each piece made visible."""
    out: list[tuple[str, bool]] = []
    rest, inside = snippet, False
    while rest:
        mark = MARK_END if inside else MARK_START
        head, found, rest = rest.partition(mark)
        if head:
            out.append((visible(head), inside))
        if not found:
            break
        inside = not inside
    return out


def marked(snippet: str, *, colour: bool) -> str:
    """The snippet with its matches shown (bold red on a terminal, else between « »)."""
    if colour:
        return "".join(style(t, "red", bold=True) if m else t for t, m in pieces(snippet))
    return "".join(f"{OPEN}{t}{CLOSE}" if m else t for t, m in pieces(snippet))


def hit_line(hit: Hit, where: str, *, colour: bool) -> str:
    """``WHERE:SEQ: DIRECTION METHOD SNIPPET`` (WHERE: a connection id, or file:id)."""
    what = hit.method or hit.kind
    prefix = f"{where}:{hit.seq}:"
    direction = {"stderr": "err"}.get(hit.direction, hit.direction)
    if colour:
        prefix = style(prefix, "magenta")
    return f"{prefix} {direction} {visible(what)}  {marked(hit.snippet, colour=colour)}"


def hit_record(hit: Hit, where: str | int) -> dict[str, Any]:
    """A JSON-ready hit: where it is, what it is, its snippet and the match spans in it."""
    text, spans, at = [], [], 0
    for piece, is_match in pieces(hit.snippet):
        if is_match:
            spans.append([at, at + len(piece)])
        text.append(piece)
        at += len(piece)
    return {
        "connection": where, "seq": hit.seq, "direction": hit.direction, "kind": hit.kind,
        "method": hit.method, "time": wall(hit.wall_ns), "snippet": "".join(text),
        "matches": spans,
    }  # fmt: skip
