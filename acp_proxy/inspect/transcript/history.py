"""Sans-I/O: the materialized (replay) form of a session's history.

Rules:
- ``materialize(session)`` returns the ``session/update`` payloads an agent would replay for
  the history (spec: v2 ``session/resume`` with ``replayFrom``, compaction RFD): one whole
  upsert per entity with its final fields, in first-seen order. Applied to an empty transcript
  they rebuild an equal history (``SessionView.history``); the tests hold that as a property.
- Notices are live only and never materialized; neither are events (permissions, calls).
- Messages without a ``messageId`` (v1) replay as chunks without one, one per content block.
- Unknown update kinds replay verbatim.
"""

from __future__ import annotations

import base64
from typing import Any

from acp_proxy.inspect.transcript.entities import CHUNK_OF_ROLE, UPSERT_OF_ROLE
from acp_proxy.inspect.transcript.values import (
    Compaction,
    Entry,
    Message,
    Plan,
    SessionView,
    Subagent,
    Terminal,
    ToolCall,
    UnknownUpdate,
)


def materialize(session: SessionView) -> list[dict[str, Any]]:
    """The replay form of ``session``'s history (see module rules)."""
    updates: list[dict[str, Any]] = []
    for entry in session.history:
        updates.extend(_entry(entry))
    return updates


def _entry(entry: Entry) -> list[dict[str, Any]]:
    if isinstance(entry, Message):
        if entry.message_id is None:
            kind = CHUNK_OF_ROLE[entry.role]
            return [{"sessionUpdate": kind, **entry.fields, "content": b} for b in entry.content]
        return [
            {
                "sessionUpdate": UPSERT_OF_ROLE[entry.role],
                "messageId": entry.message_id,
                **entry.fields,
                "content": list(entry.content),
            }
        ]
    if isinstance(entry, ToolCall):
        return [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": entry.tool_call_id,
                **entry.fields,
                "content": list(entry.content),
            }
        ]
    if isinstance(entry, Plan):
        if entry.plan_id is None:
            return [{"sessionUpdate": "plan", **entry.body}]
        return [{"sessionUpdate": "plan_update", "plan": dict(entry.body)}]
    if isinstance(entry, Terminal):
        data = base64.b64encode(entry.output).decode()
        update = {"sessionUpdate": "terminal_update", "terminalId": entry.terminal_id}
        return [{**update, **entry.fields, "output": {"data": data}}]
    if isinstance(entry, Compaction):
        update = {"sessionUpdate": "compaction_update", "compactionId": entry.compaction_id}
        return [{**update, **entry.fields, "summary": list(entry.summary)}]
    if isinstance(entry, Subagent):
        return [{"sessionUpdate": "subagent_update", "sessionId": entry.session_id, **entry.fields}]
    if isinstance(entry, UnknownUpdate):
        return [entry.update] if isinstance(entry.update, dict) else []
    return []
