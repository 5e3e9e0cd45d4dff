"""The summary of one recorded connection, read back for ``demo`` and the terminal summary.

Rules:
- Read-only: one connection row and what the views (``rpc_calls``, ``prompt_turns``) say of it;
  an unknown connection id is ``UnknownRecording``.
- JSON columns are decoded by ``protocol.decode.column_value``, as every reader does.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.errors import UnknownRecording
from acp_proxy.protocol.decode import column_value


@dataclass(frozen=True, slots=True)
class ConnectionSummary:
    """A short account of one recorded connection, for ``demo`` and friends."""

    connection_id: int
    label: str | None
    status: str
    exit_code: int | None
    exit_signal: int | None
    protocol_version: int | None
    client_info: Any
    agent_info: Any
    duration_ms: float | None
    frames: dict[str, int]
    calls: list[tuple[str, str, str | None, float | None]]  # caller, method, outcome, ms
    updates: list[tuple[str, int]]
    prompt_turns: list[tuple[str | None, str | None, float | None]]  # session, stop, ms
    argv: list[str] = field(default_factory=list)  # the agent's command line
    error: str | None = None  # why the agent did not start
    client_argv: list[str] | None = None  # the client's command line, when known


def summarize(db: sqlite3.Connection, connection_id: int) -> ConnectionSummary:
    """Read the summary of one connection (see ``ConnectionSummary``)."""
    row = db.execute(
        "SELECT label, status, exit_code, exit_signal, protocol_version, client_info, "
        "agent_info, (ended_ns - started_ns) / 1e6, frames_c2a, frames_a2c, lines_stderr, "
        "argv, error, client_argv FROM connection WHERE id = ?",
        (connection_id,),
    ).fetchone()
    if row is None:
        raise UnknownRecording(f"no connection {connection_id}")
    calls = db.execute(
        "SELECT caller, method, coalesce(stop_reason, outcome), latency_ms FROM rpc_calls "
        "WHERE connection_id = ? ORDER BY request_seq",
        (connection_id,),
    ).fetchall()
    updates = db.execute(
        "SELECT update_kind, count(*) FROM frame WHERE connection_id = ? "
        "AND update_kind IS NOT NULL GROUP BY update_kind ORDER BY min(seq)",
        (connection_id,),
    ).fetchall()
    turns = db.execute(
        "SELECT session_id, stop_reason, duration_ms FROM prompt_turns "
        "WHERE connection_id = ? ORDER BY prompt_seq",
        (connection_id,),
    ).fetchall()
    return ConnectionSummary(
        connection_id=connection_id, label=row[0], status=row[1], exit_code=row[2],
        exit_signal=row[3], protocol_version=row[4], client_info=column_value(row[5]),
        agent_info=column_value(row[6]), duration_ms=row[7],
        frames={"c2a": row[8], "a2c": row[9], "stderr": row[10]},
        calls=[tuple(c) for c in calls], updates=[tuple(u) for u in updates],
        prompt_turns=[tuple(t) for t in turns], argv=column_value(row[11]) or [], error=row[12],
        client_argv=column_value(row[13]),
    )  # fmt: skip
