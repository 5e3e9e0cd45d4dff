"""Sans-I/O rules for the ID-addressed entities of a session's history.

Rules (ACP v1 and the v2 draft's prompt lifecycle, see docs/inspect.md):
- Updates apply per ID in receive order. The first update for an ID creates the entity and
  fixes its place in the timeline; later ones patch it in place.
- Upserts patch fields: omitted leaves a field unchanged, ``null`` clears it, a value replaces
  it. Whole ``content`` (``summary`` for compactions) replaces what was accumulated; ``[]`` or
  ``null`` clears it. Chunks append one block; a chunk's ``_meta`` is the chunk's own and never
  patches the entity.
- Session-directed messages: a ``null`` or omitted sender/recipient leaves the known one.
- ``terminal_update.output`` is a full snapshot; ``terminal_output_chunk`` appends its own
  base64-decoded bytes. Data that is not base64 appends nothing and is counted.
- Peer input never raises: a value of the wrong type is kept as sent or ignored.
- Linear in the frames: a chunk's blocks (or terminal bytes) go into the entity's ``Appended``
  buffer (``append_chunk``), which ``settle`` folds into the frozen entity once, before an
  upsert applies to it and when the transcript is viewed. Rebuilding the entity per chunk would
  copy everything streamed so far for each chunk (quadratic in the chunks of one message).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from acp_proxy.inspect.transcript.values import (
    Compaction,
    Entry,
    Message,
    Plan,
    Subagent,
    Terminal,
    ToolCall,
)

Key = tuple[str, ...]

MESSAGE_UPSERTS = {
    "user_message": "user", "agent_message": "agent", "agent_thought": "thought",
    "session_message": "session",
}  # fmt: skip
MESSAGE_CHUNKS = {
    "user_message_chunk": "user", "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought", "session_message_chunk": "session",
}  # fmt: skip
UPSERT_OF_ROLE = {role: kind for kind, role in MESSAGE_UPSERTS.items()}
CHUNK_OF_ROLE = {role: kind for kind, role in MESSAGE_CHUNKS.items()}
PARTICIPANTS = ("senderSessionId", "recipientSessionId")
ENTITY_KINDS = frozenset(
    {
        *MESSAGE_UPSERTS, *MESSAGE_CHUNKS, "tool_call", "tool_call_update",
        "tool_call_content_chunk", "plan", "plan_update", "terminal_update",
        "terminal_output_chunk", "compaction_update", "compaction_summary_chunk",
        "subagent_update",
    }
)  # fmt: skip


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def entity_key(kind: str, update: Mapping[str, Any]) -> Key | None:
    """The identity an update addresses, or None when it has none (v1 chunks without an id).

    Plans without ``planId`` (v1 ``plan``) all address the one unnamed plan of the session.
    """
    if kind in MESSAGE_UPSERTS or kind in MESSAGE_CHUNKS:
        role = MESSAGE_UPSERTS.get(kind) or MESSAGE_CHUNKS[kind]
        message_id = _str(update.get("messageId"))
        return None if message_id is None else ("message", role, message_id)
    if kind in ("tool_call", "tool_call_update", "tool_call_content_chunk"):
        return ("tool", _str(update.get("toolCallId")) or "")
    if kind == "plan":
        return ("plan", "")
    if kind in ("plan_update", "plan_removed"):
        plan = update.get("plan")
        plan_id = plan.get("planId") if isinstance(plan, dict) else update.get("planId")
        return ("plan", _str(plan_id) or "")
    if kind in ("terminal_update", "terminal_output_chunk"):
        return ("terminal", _str(update.get("terminalId")) or "")
    if kind in ("compaction_update", "compaction_summary_chunk"):
        return ("compaction", _str(update.get("compactionId")) or "")
    if kind == "subagent_update":
        return ("subagent", _str(update.get("sessionId")) or "")
    return None


def new_entity(key: Key, first_seq: int, turn: int | None, origin: str) -> Entry:
    """An empty entity for a first-seen key (its fields come from ``apply``)."""
    family, name = key[0], key[-1]
    if family in ("message", "anon"):
        message_id = name if family == "message" else None
        return Message(key[1], message_id, first_seq=first_seq, turn=turn, origin=origin)
    if family == "tool":
        return ToolCall(name, first_seq=first_seq, turn=turn)
    if family == "plan":
        return Plan(name or None, first_seq=first_seq, turn=turn)
    if family == "terminal":
        return Terminal(name, first_seq=first_seq, turn=turn)
    if family == "compaction":
        return Compaction(name, first_seq=first_seq, turn=turn)
    return Subagent(name, first_seq=first_seq, turn=turn)


def _content(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list) else (value,)


def _patch(
    fields: Mapping[str, Any],
    update: Mapping[str, Any],
    skip: frozenset[str],
    keep_on_null: tuple[str, ...] = (),
) -> dict[str, Any]:
    patched = dict(fields)
    for name, value in update.items():
        if name in skip:
            continue
        if value is None:
            if name not in keep_on_null:
                patched.pop(name, None)
        else:
            patched[name] = value
    return patched


def _b64(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


_MESSAGE_SKIP = frozenset({"sessionUpdate", "messageId", "content"})
_TOOL_SKIP = frozenset({"sessionUpdate", "toolCallId", "content"})
_TERMINAL_SKIP = frozenset({"sessionUpdate", "terminalId", "output"})
_COMPACTION_SKIP = frozenset({"sessionUpdate", "compactionId", "summary"})
_SUBAGENT_SKIP = frozenset({"sessionUpdate", "sessionId"})


CHUNK_KINDS = frozenset(
    {*MESSAGE_CHUNKS, "tool_call_content_chunk", "compaction_summary_chunk",
     "terminal_output_chunk"}
)  # fmt: skip


class Appended:
    """What chunks appended to one entity since it was last settled."""

    __slots__ = ("blocks", "data")

    def __init__(self) -> None:
        self.blocks: list[Any] = []
        self.data = bytearray()


def append_chunk(entity: Entry, kind: str, update: Mapping[str, Any], appended: Appended) -> Entry:
    """Apply a chunk (``kind`` in ``CHUNK_KINDS``): its blocks or bytes go to ``appended``;
    returns the entity with whatever else the chunk changes (participants, bad data counts)."""
    if isinstance(entity, Terminal):
        data = _b64(update.get("data"))
        if data is None:
            return replace(entity, bad_chunks=entity.bad_chunks + 1)
        appended.data += data
        return entity
    appended.blocks.extend(_content(update.get("content")))
    if isinstance(entity, Message):
        # Only participant ids patch from a chunk; its _meta is the chunk's own.
        named = {p: update[p] for p in PARTICIPANTS if update.get(p) is not None}
        if named and any(entity.fields.get(p) != v for p, v in named.items()):
            return replace(entity, fields={**entity.fields, **named})
    return entity


def settle(entity: Entry, appended: Appended | None) -> Entry:
    """The entity with what ``appended`` holds folded in (the buffer is then empty)."""
    if appended is None or not (appended.blocks or appended.data):
        return entity
    blocks, data = tuple(appended.blocks), bytes(appended.data)
    appended.blocks.clear()
    appended.data.clear()
    if isinstance(entity, Message | ToolCall):
        return replace(entity, content=entity.content + blocks)
    if isinstance(entity, Compaction):
        return replace(entity, summary=entity.summary + blocks)
    if isinstance(entity, Terminal):
        return replace(entity, output=entity.output + data)
    return entity


def apply(entity: Entry, kind: str, update: Mapping[str, Any]) -> Entry:
    """Apply one update of ``kind`` to the entity it addresses; returns the new value.

    Chunks are best applied with ``append_chunk`` (linear); here they append at once.
    """
    if kind in CHUNK_KINDS:
        appended = Appended()
        return settle(append_chunk(entity, kind, update, appended), appended)
    if isinstance(entity, Message):
        return _apply_message(entity, kind, update)
    if isinstance(entity, ToolCall):
        content = _content(update["content"]) if "content" in update else entity.content
        return replace(entity, content=content, fields=_patch(entity.fields, update, _TOOL_SKIP))
    if isinstance(entity, Plan):
        if kind == "plan":
            body = {k: v for k, v in update.items() if k != "sessionUpdate"}
            return replace(entity, body=body)
        plan = update.get("plan")
        return replace(entity, body=plan if isinstance(plan, dict) else {"plan": plan})
    if isinstance(entity, Terminal):
        return _apply_terminal(entity, kind, update)
    if isinstance(entity, Compaction):
        summary = _content(update["summary"]) if "summary" in update else entity.summary
        fields = _patch(entity.fields, update, _COMPACTION_SKIP)
        return replace(entity, summary=summary, fields=fields)
    if isinstance(entity, Subagent):
        return replace(entity, fields=_patch(entity.fields, update, _SUBAGENT_SKIP))
    return entity


def _apply_message(entity: Message, kind: str, update: Mapping[str, Any]) -> Message:
    content = _content(update["content"]) if "content" in update else entity.content
    fields = _patch(entity.fields, update, _MESSAGE_SKIP, keep_on_null=PARTICIPANTS)
    return replace(entity, content=content, fields=fields)


def _apply_terminal(entity: Terminal, kind: str, update: Mapping[str, Any]) -> Terminal:
    output, bad = entity.output, entity.bad_chunks
    if "output" in update:
        snapshot = update["output"]
        if snapshot is None:
            output = b""
        else:
            data = _b64(snapshot.get("data")) if isinstance(snapshot, dict) else None
            output, bad = (output, bad + 1) if data is None else (data, bad)
    fields = _patch(entity.fields, update, _TERMINAL_SKIP)
    return replace(entity, output=output, bad_chunks=bad, fields=fields)
