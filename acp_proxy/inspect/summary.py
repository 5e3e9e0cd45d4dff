"""Plain-text account of one recorded connection (used by ``demo``).

Rules:
- Pure formatting: takes a ``ConnectionSummary`` and returns text, no I/O.
- Says where the recording is and how to look further with plain SQL tools, since the database
  is the product.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from acp_proxy.display import visible
from acp_proxy.inspect.render.words import peer
from acp_proxy.plural import counted
from acp_proxy.store.summary import ConnectionSummary


def _ending(summary: ConnectionSummary) -> str:
    if summary.exit_signal is not None:
        return f"killed by signal {summary.exit_signal}"
    if summary.exit_code is not None:
        return f"exit status {summary.exit_code}"
    if summary.status == "spawn_failed" and summary.error:
        return f"did not start ({summary.error})"
    return summary.status


def render_summary(
    summary: ConnectionSummary,
    db_path: Path,
    *,
    datasette_installed: bool = True,
    programs: Mapping[str, str] | None = None,
) -> str:
    """The demo's closing words. ``programs`` says how to run ``sqlite-utils`` and ``datasette``
    from where the user is (a path when they are not on ``PATH``); their names by default."""
    called = {"sqlite-utils": "sqlite-utils", "datasette": "datasette", **(programs or {})}
    db = shlex.quote(str(db_path))
    label = f" ({summary.label})" if summary.label else ""
    duration = f", {summary.duration_ms / 1000:.2f} s" if summary.duration_ms else ""
    lines = [
        f"Recorded connection {summary.connection_id}{label} in {db_path}",
        f"  agent:   {peer(summary.agent_info, summary.argv)}",
        f"  client:  {peer(summary.client_info, summary.client_argv)}",
        f"  protocol version {summary.protocol_version}; {_ending(summary)}{duration}",
        f"  frames:  {summary.frames['c2a']} client->agent, {summary.frames['a2c']} "
        f"agent->client, {counted(summary.frames['stderr'], 'agent stderr line')}",
    ]
    for caller, method, outcome, latency_ms in summary.calls:
        took = f"{latency_ms:.1f} ms" if latency_ms is not None else "no answer"
        lines.append(f"  call:    {caller} -> {method}: {outcome or 'pending'}, {took}")
    if summary.updates:
        updates = ", ".join(f"{kind} x{count}" for kind, count in summary.updates)
        lines.append(f"  updates: {updates}")
    for session, stop_reason, duration_ms in summary.prompt_turns:
        took = f" in {duration_ms:.0f} ms" if duration_ms is not None else ""
        lines.append(f"  turn:    session {session}: {stop_reason or 'unfinished'}{took}")
    where = f"WHERE connection_id = {summary.connection_id}"
    # Shell commands shown to the user, never executed here.
    lines += [
        "",
        "Look further:",
        f'  sqlite3 {db} "SELECT seq, direction, kind, method, update_kind FROM frames {where}"',  # noqa: S608
        f'  {called["sqlite-utils"]} {db} "SELECT * FROM rpc_calls {where}" --table',  # noqa: S608
        f"  {called['datasette']} {db}"
        + ("" if datasette_installed else "    (install it: pip install 'acp-proxy[demo]')"),
    ]
    return visible("\n".join(lines), lines=True) + "\n"
