"""Sans-I/O ACP vocabulary: methods, update kinds, stop reasons, v1 and v2-draft differences.

Rules:
- Facts here come from the ACP specification (stable v1 and the v2 draft, see
  docs/design.md for sources). Nothing here validates shapes: that is the JSON Schemas' job.
- Unknown methods and update kinds are normal (extensions start with ``_``, future versions add
  more): every function here accepts them and says "unknown", never raises.
- ``notice`` is the only live-only update kind: it is forwarded and recorded, never replayed.
- This module knows no process, clock or database.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Direction(StrEnum):
    """Which way a frame travelled. Stored as text in recordings."""

    CLIENT_TO_AGENT = "c2a"
    AGENT_TO_CLIENT = "a2c"
    AGENT_STDERR = "stderr"

    @property
    def sender(self) -> str:
        return "client" if self is Direction.CLIENT_TO_AGENT else "agent"

    @property
    def opposite(self) -> Direction:
        if self is Direction.CLIENT_TO_AGENT:
            return Direction.AGENT_TO_CLIENT
        return Direction.CLIENT_TO_AGENT


PROTOCOL_V1 = 1
PROTOCOL_V2 = 2

INITIALIZE = "initialize"
SESSION_UPDATE = "session/update"
SESSION_PROMPT = "session/prompt"
SESSION_NEW = "session/new"
SESSION_LOAD = "session/load"
SESSION_RESUME = "session/resume"
SESSION_FORK = "session/fork"
SESSION_CANCEL = "session/cancel"
REQUEST_PERMISSION = "session/request_permission"
CANCEL_REQUEST = "$/cancel_request"

# Methods the agent handles (client -> agent), stable and unstable, v1 and v2 draft.
AGENT_METHODS_V1 = frozenset(
    {
        "initialize", "authenticate", "logout", "session/new", "session/load", "session/resume",
        "session/list", "session/delete", "session/close", "session/prompt", "session/cancel",
        "session/set_mode", "session/set_config_option", "session/fork", "providers/list",
        "providers/set", "providers/disable", "nes/start", "nes/suggest", "nes/accept",
        "nes/reject", "nes/close", "document/didOpen", "document/didChange",
        "document/didClose", "document/didSave", "document/didFocus", "mcp/message",
    }
)  # fmt: skip
AGENT_METHODS_V2 = (
    AGENT_METHODS_V1 - {"authenticate", "logout", "session/load", "session/set_mode"}
) | {"auth/login", "auth/logout"}

# Methods the client handles (agent -> client).
CLIENT_METHODS_V1 = frozenset(
    {
        "session/update", "session/request_permission", "fs/read_text_file",
        "fs/write_text_file", "terminal/create", "terminal/output", "terminal/wait_for_exit",
        "terminal/kill", "terminal/release", "elicitation/create", "elicitation/complete",
        "mcp/connect", "mcp/message", "mcp/disconnect",
    }
)  # fmt: skip
CLIENT_METHODS_V2 = CLIENT_METHODS_V1 - {
    "fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/output",
    "terminal/wait_for_exit", "terminal/kill", "terminal/release",
}  # fmt: skip

PROTOCOL_METHODS = frozenset({CANCEL_REQUEST})

UPDATE_KINDS_V1 = frozenset(
    {
        "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
        "tool_call_update", "plan", "available_commands_update", "current_mode_update",
        "config_option_update", "session_info_update", "usage_update",
        # v1 unstable
        "plan_update", "plan_removed", "notice", "compaction_update", "compaction_summary_chunk",
    }
)  # fmt: skip
UPDATE_KINDS_V2 = frozenset(
    {
        "user_message", "user_message_chunk", "agent_message", "agent_message_chunk",
        "agent_thought", "agent_thought_chunk", "state_update", "tool_call_update",
        "tool_call_content_chunk", "terminal_update", "terminal_output_chunk", "plan_update",
        "available_commands_update", "config_option_update", "session_info_update",
        "usage_update",
        # v2 unstable and draft
        "plan_removed", "notice", "compaction_update", "compaction_summary_chunk",
        "subagent_update", "session_message", "session_message_chunk",
    }
)  # fmt: skip

# Live advisories: never part of session history, never replayed (spec: session notices).
LIVE_ONLY_UPDATE_KINDS = frozenset({"notice"})

# The updates of a session compaction (session-compaction RFD): folded in history replay.
COMPACTION_KINDS = frozenset({"compaction_update", "compaction_summary_chunk"})

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})

# Methods whose response carries the session id the agent chose.
SESSION_CREATING_METHODS = frozenset({SESSION_NEW, SESSION_FORK})


def is_extension_method(method: str) -> bool:
    """Custom methods start with an underscore (spec: extensibility)."""
    return method.startswith("_")


def is_known_method(method: str, protocol_version: int | None) -> bool:
    """Whether ``method`` is defined by the given protocol version (either version if unknown)."""
    if method in PROTOCOL_METHODS:
        return True
    if protocol_version == PROTOCOL_V2:
        return method in AGENT_METHODS_V2 or method in CLIENT_METHODS_V2
    if protocol_version == PROTOCOL_V1:
        return method in AGENT_METHODS_V1 or method in CLIENT_METHODS_V1
    return method in AGENT_METHODS_V1 | AGENT_METHODS_V2 | CLIENT_METHODS_V1 | CLIENT_METHODS_V2


def is_known_update_kind(kind: str, protocol_version: int | None) -> bool:
    if protocol_version == PROTOCOL_V2:
        return kind in UPDATE_KINDS_V2
    if protocol_version == PROTOCOL_V1:
        return kind in UPDATE_KINDS_V1
    return kind in UPDATE_KINDS_V1 or kind in UPDATE_KINDS_V2


def client_info(initialize_params: Any) -> Any:
    """The client's implementation info: ``clientInfo`` in v1, ``info`` in the v2 draft."""
    if not isinstance(initialize_params, dict):
        return None
    return initialize_params.get("clientInfo", initialize_params.get("info"))


def agent_info(initialize_result: Any) -> Any:
    """The agent's implementation info: ``agentInfo`` in v1, ``info`` in the v2 draft."""
    if not isinstance(initialize_result, dict):
        return None
    return initialize_result.get("agentInfo", initialize_result.get("info"))


def protocol_version(initialize_payload: Any) -> int | None:
    """``protocolVersion`` of an initialize request or result, if it is an integer."""
    if not isinstance(initialize_payload, dict):
        return None
    version = initialize_payload.get("protocolVersion")
    if isinstance(version, int) and not isinstance(version, bool):
        return version
    return None
