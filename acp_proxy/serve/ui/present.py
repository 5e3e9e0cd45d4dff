"""Pure helpers: recorded frames and transcript values as JSON-ready data for the page.

Rules:
- Everything a peer sent stays data: strings are passed on as strings for the page to insert
  as text. Bytes become ``segments``: runs of text and of escapes (invalid UTF-8 as ``\\xNN``,
  control characters as ``\\n``, ``\\x1b`` ...), so the page can show the exact bytes and
  mark what was escaped without ever interpreting them.
- Nothing here raises on odd peer values; unknown shapes become JSON text.
- Previews read only the first bytes of a payload (a 16 MiB frame is never parsed for a row);
  their words are those of ``show`` (inspect/render/preview.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from acp_proxy.inspect.render import words
from acp_proxy.inspect.render.preview import cut, frame_preview
from acp_proxy.inspect.transcript.values import (
    Call,
    Compaction,
    Item,
    Malformed,
    Message,
    Notice,
    Permission,
    Plan,
    PromptTurn,
    StateChange,
    Subagent,
    Terminal,
    ToolCall,
    TurnMark,
    UnknownUpdate,
)
from acp_proxy.protocol.decode import json_or_none

PREVIEW_CHARS = 160
RUN_TEXT_CHARS = 2000
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def segments(raw: bytes) -> list[tuple[str, bool]]:
    """The bytes as ``(text, is_escape)`` runs: valid UTF-8 text, and escapes for the rest."""
    out: list[tuple[str, bool]] = []
    text = raw.decode("utf-8", "surrogateescape")
    plain: list[str] = []

    def escape(shown: str) -> None:
        if plain:
            out.append(("".join(plain), False))
            plain.clear()
        if out and out[-1][1]:
            out[-1] = (out[-1][0] + shown, True)
        else:
            out.append((shown, True))

    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
            escape(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            escape(_NAMED.get(char, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"))
        else:
            plain.append(char)
    if plain:
        out.append(("".join(plain), False))
    return out


def shown_text(text: str) -> str:
    """One line of recorded text with control characters made visible (for previews)."""
    return "".join(s for s, _ in segments(text.encode("utf-8", "surrogatepass")))


def _cut(text: str, width: int = PREVIEW_CHARS) -> str:
    return cut(shown_text(text), width)


def _parse(head: bytes, size: int) -> Any:
    return json_or_none(head) if _complete(head, size) else None


def _complete(head: bytes, size: int) -> bool:
    return len(head) >= size - 1  # else only the first bytes were read


def chunk_text(update: Mapping[str, Any]) -> str:
    content = update.get("content")
    return words.content_text(content) if content is not None else ""


def preview(record: Mapping[str, Any]) -> str:
    """A frame summary's preview from its ``head`` bytes (the words of preview.py)."""
    head: bytes = record["head"]
    complete = _complete(head, record["size"])
    return _cut(frame_preview(head, record["direction"], record["kind"], complete=complete))


def run_text(heads: list[tuple[bytes, int]]) -> str:
    """The text a run of chunks adds up to (as far as the given heads go)."""
    parts: list[str] = []
    total = 0
    for head, size in heads:
        value = _parse(head, size)
        params = value.get("params") if isinstance(value, dict) else None
        update = params.get("update") if isinstance(params, dict) else None
        if isinstance(update, dict):
            text = chunk_text(update)
            parts.append(text)
            total += len(text)
        if total > RUN_TEXT_CHARS:
            break
    return _cut("".join(parts), RUN_TEXT_CHARS)


def frame_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """A frame summary for the page (no bytes), with its preview when the head was read."""
    out = {k: v for k, v in record.items() if k not in ("head", "raw")}
    if "head" in record:
        out["preview"] = preview(record)
    if isinstance(out.get("rpc_id"), int) and abs(out["rpc_id"]) > 2**53:
        out["rpc_id"] = str(out["rpc_id"])
    return out


# --------------------------------------------------------------------------- transcript


def _plain(value: Any) -> Any:
    """Transcript values as JSON-ready data (bytes as text with escapes)."""
    if isinstance(value, bytes):
        return shown_text(value.decode("utf-8", "replace"))
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return words.to_json(value)


def turn_data(turn: PromptTurn) -> dict[str, Any]:
    data: dict[str, Any] = _plain({f.name: getattr(turn, f.name) for f in dataclasses.fields(turn)})
    data["status"] = turn.status
    data["prompt_text"] = words.content_text(turn.prompt)
    return data


def item_data(item: Item, turns: tuple[PromptTurn, ...]) -> dict[str, Any]:
    """One conversation item: its type, the frames it links to and what a client shows."""
    data: dict[str, Any] = {"type": type(item).__name__}
    seq = getattr(item, "first_seq", None)
    data["seq"] = seq if seq is not None else getattr(item, "seq", None)
    if isinstance(item, Message):
        data.update(role=item.role, message_id=item.message_id,
                    text=words.content_text(item.content), fields=_plain(item.fields))  # fmt: skip
    elif isinstance(item, ToolCall):
        data.update(
            tool_call_id=item.tool_call_id, title=item.title, status=item.status,
            kind=item.fields.get("kind"), locations=_plain(item.fields.get("locations")),
            content=[words.tool_content_text(c) for c in item.content],
            raw_input=_plain(item.fields.get("rawInput")),
        )  # fmt: skip
    elif isinstance(item, Plan):
        data.update(entries=[words.plan_line(e) for e in item.entries])
    elif isinstance(item, Permission):
        params: Any = item.params if isinstance(item.params, Mapping) else {}
        tool = params.get("toolCall")
        title = params.get("title") or (tool.get("title") if isinstance(tool, Mapping) else None)
        data.update(
            title=title, tool_call_id=item.tool_call_id,
            options=words.option_names(params.get("options")),
            answer=words.permission_answer(item.outcome, item.error, params.get("options")),
            answered_seq=item.answered_seq, wait_ns=item.wait_ns,
        )  # fmt: skip
    elif isinstance(item, Terminal):
        data.update(terminal_id=item.terminal_id, output=_plain(item.output),
                    fields=_plain(item.fields))  # fmt: skip
    elif isinstance(item, Compaction):
        data.update(compaction_id=item.compaction_id, status=item.status,
                    text=words.content_text(item.summary))  # fmt: skip
    elif isinstance(item, Subagent):
        data.update(session_id=item.session_id, fields=_plain(item.fields))
    elif isinstance(item, UnknownUpdate):
        data.update(kind=item.kind, update=_plain(item.update))
    elif isinstance(item, TurnMark):
        turn = turns[item.turn] if 0 <= item.turn < len(turns) else None
        data.update(turn=item.turn + 1, end=item.end)
        if turn is not None:
            data["detail"] = turn_data(turn)
            if item.end and turn.usage is not None:
                data["usage"] = words.usage_text(turn.usage)
    elif isinstance(item, Notice):
        data.update(severity=item.severity, title=item.title, description=item.description)
    elif isinstance(item, StateChange):
        data.update(state=item.state, stop_reason=item.stop_reason)
    elif isinstance(item, Call):
        data.update(caller=item.caller, method=item.method, notification=item.notification,
                    answered_seq=item.answered_seq, latency_ns=item.latency_ns,
                    error=_plain(item.error))  # fmt: skip
    elif isinstance(item, Malformed):
        data.update(direction=item.direction, reason=item.reason)
    return data
