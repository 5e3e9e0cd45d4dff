"""Datasette metadata for a recording database: descriptions, facets and canned queries.

Rules:
- Pure: returns a dict in Datasette's ``metadata.json`` shape (0.6x); ``acp-proxy
  datasette-metadata`` prints it. Datasette keys databases by file stem, so the caller passes it.
- Only tables, views and columns of docs/recording-format.md are described; canned queries use
  the views and parameters (``:connection_id``), never string-built SQL.
"""

from __future__ import annotations

from typing import Any

FRAME_COLUMNS = {
    "connection_id": "The connection row (what REF arguments call the connection id).",
    "seq": "1, 2, 3 ... per connection, in the order the proxy forwarded the frames.",
    "direction": "c2a client to agent, a2c agent to client, stderr agent stderr line.",
    "kind": "request, notification, response, error, batch, invalid, unparseable, stderr.",
    "rpc_id": "The JSON-RPC id with its JSON type (1 and '1' differ).",
    "method": "The method; for a response, the method of the request it answers.",
    "session_id": "params.sessionId, or the session a response's request named or created.",
    "update_kind": "params.update.sessionUpdate of a session/update.",
    "message_id": "update.messageId, or the messageId of a v2 prompt receipt.",
    "tool_call_id": "update.toolCallId, or toolCall.toolCallId of a permission request.",
    "stop_reason": "stopReason of a v1 prompt response or of a v2 idle state_update.",
    "raw": "The exact bytes that crossed, newline included.",
    "text": "raw as text, when it is UTF-8.",
    "elapsed_ms": "Milliseconds since the connection's first frame.",
}

QUERIES: dict[str, dict[str, Any]] = {
    "timeline": {
        "title": "Frame timeline of one connection",
        "sql": "SELECT seq, elapsed_ms, direction, kind, rpc_id, method, update_kind, "
        "stop_reason, text FROM frames WHERE connection_id = :connection_id ORDER BY seq",
    },
    "conversation": {
        "title": "Message text of one connection (prompts and agent chunks)",
        "sql": "SELECT seq, session_id, update_kind, coalesce("
        "json_extract(text, '$.params.update.content.text'), "
        "json_extract(text, '$.params.prompt[0].text')) AS said FROM frames "
        "WHERE connection_id = :connection_id AND (method = 'session/prompt' AND kind = 'request' "
        "OR update_kind LIKE '%message%' OR update_kind LIKE '%thought%') ORDER BY seq",
    },
    "slowest_requests": {
        "title": "Slowest requests",
        "sql": "SELECT connection_id, request_seq, caller, method, outcome, latency_ms "
        "FROM rpc_calls WHERE latency_ms IS NOT NULL ORDER BY latency_ms DESC LIMIT 50",
    },
    "unanswered_requests": {
        "title": "Requests that never got an answer",
        "sql": "SELECT connection_id, request_seq, caller, method, session_id FROM rpc_calls "
        "WHERE outcome IS NULL ORDER BY connection_id, request_seq",
    },
    "errors": {
        "title": "Error responses",
        "sql": "SELECT connection_id, seq, method, error_code, "
        "json_extract(text, '$.error.message') AS message FROM frames WHERE kind = 'error' "
        "ORDER BY connection_id, seq",
    },
    "not_jsonrpc": {
        "title": "Frames that are not clean JSON-RPC",
        "sql": "SELECT connection_id, seq, direction, kind, bad_json, bad_utf8, not_jsonrpc, "
        "batch, no_newline, hex(substr(raw, 1, 40)) AS first_bytes FROM frame "
        "WHERE bad_json OR bad_utf8 OR not_jsonrpc OR no_newline ORDER BY connection_id, seq",
    },
}


def metadata(database: str) -> dict[str, Any]:
    """Datasette metadata for the database Datasette calls ``database`` (the file's stem)."""
    facets = ["direction", "kind", "method", "update_kind"]
    tables: dict[str, Any] = {
        "connection": {
            "description": "One row per proxied agent process.", "sort_desc": "id",
            "label_column": "label", "facets": ["status", "protocol_version"],
        },
        "frame": {
            "description": "One row per line that crossed; raw is the exact bytes.",
            "sort": "id", "facets": facets, "columns": FRAME_COLUMNS,
        },
        "frames": {
            "description": "Frames with time, elapsed milliseconds and raw as text.",
            "facets": facets, "columns": FRAME_COLUMNS,
        },
        "rpc_calls": {
            "description": "Each request with its response: outcome and latency.",
            "facets": ["caller", "method", "outcome"],
        },
        "sessions": {"description": "Each session per connection: frames, prompts, updates."},
        "prompt_turns": {
            "description": "Each session/prompt: when and how it ended (v1: the response; "
            "v2 draft: the first idle state_update).",
            "facets": ["status", "stop_reason"],
        },
    }  # fmt: skip
    return {
        "title": "acp-proxy recordings",
        "description": "ACP traffic recorded by acp-proxy. Format: docs/recording-format.md.",
        "databases": {
            database: {
                "description": "Connections, frames and the views over them.",
                "tables": tables,
                "queries": QUERIES,
            }
        },
    }
