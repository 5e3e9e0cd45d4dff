"""A frame's one-line preview: what it says beyond its kind and method, for every surface.

Rules:
- One answer for ``show``, ``tail``, the HTML export and the web inspector: ``frame_preview``
  gives the words; each surface only cuts them (``cut``) and makes them safe for its medium
  (the terminal's ``visible``, the page's escapes).
- The words are one line: runs of white space (newlines among them) become one space.
- Only the first bytes of a large frame may be given (``complete=False``): then nothing is
  parsed and the preview is the start of the line as text.
- Session updates: message chunks and anything with ``content`` or ``summary`` show their text;
  tool calls their title and status (or their id); plans their entries (``words.plan_line``,
  joined by `` | ``); titles, states, modes and usage their value; any other update its
  members as JSON. A request or notification shows its params but the session id and
  ``_meta``; an error its code and message; a result its JSON, unless empty.
- Pure: bytes in, a string out; nothing here raises on odd peer values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_proxy.inspect.render import words
from acp_proxy.protocol.decode import json_or_none

_TOOL_CALLS = ("tool_call", "tool_call_update")


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def one_line(text: str) -> str:
    return " ".join(text.split())


def update_preview(update: Mapping[str, Any]) -> str:
    """The words of a ``session/update``'s ``update`` object."""
    kind = update.get("sessionUpdate")
    if kind in _TOOL_CALLS:
        parts = [update.get("title"), update.get("status")]
        return " ".join(str(p) for p in parts if p) or str(update.get("toolCallId", ""))
    for name in ("content", "summary"):
        if name in update:
            return words.content_text(update[name])
    if "plan" in update or "entries" in update:
        plan = update.get("plan", update)
        entries = plan.get("entries") if isinstance(plan, Mapping) else None
        return " | ".join(words.plan_line(e) for e in entries or [])
    for name in ("title", "status", "state", "currentModeId"):
        if isinstance(update.get(name), str):
            extra = update.get("stopReason") or update.get("status") if name != "status" else None
            return f"{update[name]}" + (f" {extra}" if isinstance(extra, str) else "")
    if "used" in update:
        return words.usage_text(update)
    return words.to_json({k: v for k, v in update.items() if k != "sessionUpdate"})


def frame_preview(raw: bytes, direction: str, kind: str, *, complete: bool = True) -> str:
    """The preview of a frame with bytes ``raw`` (``complete``: all of them), uncut."""
    return one_line(_words(raw, direction, kind, complete))


def _words(raw: bytes, direction: str, kind: str, complete: bool) -> str:
    if direction == "stderr" or kind == "unparseable" or not complete:
        return raw.decode("utf-8", "replace")
    value = json_or_none(raw)
    if value is None:  # not JSON (or ``null``): the line as text
        return raw.decode("utf-8", "replace")
    if not isinstance(value, dict):
        return words.to_json(value)
    params = value.get("params")
    if isinstance(params, dict) and isinstance(params.get("update"), dict):
        return update_preview(params["update"])
    error = value.get("error")
    if isinstance(error, dict):
        return f"{error.get('code')} {error.get('message')}"
    if isinstance(params, dict):
        shown = {k: v for k, v in params.items() if k not in ("sessionId", "_meta")}
        return words.to_json(shown) if shown else ""
    result = value.get("result")
    return words.to_json(result) if result not in (None, {}) else ""
