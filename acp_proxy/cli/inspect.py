"""Reading commands: ``ls``, ``show``, ``tail`` and ``stats``. Wiring only.

Rules:
- Recordings are opened read-only by the REF opener (store/refs.py); a missing or unusable
  database, file or REF is one line on stderr and exit status 2 (reported by cli/main.py).
- Recorded text reaches the terminal only through ``terminal.visible`` (the renderers call it).
- Output streams: each frame line is written as soon as it is read, so the first page of a
  huge recording shows at once; a closed pipe (``| head``) ends the command quietly.
- Colour only on a terminal (``click.echo`` strips it otherwise).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from acp_proxy.cli.main import db_option, open_ref, report, resolve_db
from acp_proxy.inspect.render.terminal import json_visible, visible
from acp_proxy.inspect.render.text import (
    STATS_HEADER,
    connection_line,
    frame_json,
    frame_line,
    incomplete,
    incomplete_note,
    pretty_body,
    table,
    turn_record,
    turn_stats,
)
from acp_proxy.store import readers as store_read
from acp_proxy.store.values import FrameRow

F = TypeVar("F", bound=Callable[..., Any])
MAX_INT = 2**63 - 1  # what SQLite holds: larger numbers are refused as options
MAX_SECONDS = 10**6


@contextlib.contextmanager
def quiet_pipe() -> Iterator[None]:
    """End quietly when the reader of stdout goes away (``acp-proxy show | head``)."""
    try:
        yield
        sys.stdout.flush()
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)


def filter_options(function: F) -> F:
    options = [
        click.option("--session", help="Only frames of this session id."),
        click.option("--method", help="Only this method (a glob: 'session/*', 'fs/*')."),
        click.option("--kind", help="Only this frame kind (request, notification, response, "
                     "error, stderr ...) or update kind (agent_message_chunk ...)."),
        click.option("--direction", type=click.Choice(sorted(store_read.DIRECTIONS)),
                     help="Only frames going this way (client = c2a, agent = a2c)."),
        click.option("--grep", help="Only frames whose raw bytes contain TEXT (case-sensitive)."),
    ]  # fmt: skip
    for option in reversed(options):
        function = option(function)
    return function


def output_options(function: F) -> F:
    formats = click.Choice(["line", "raw", "json", "pretty"])
    function = click.option(
        "--pretty", "fmt", flag_value="pretty", help="Each frame's JSON indented under its line."
    )(function)
    function = click.option("--json", "fmt", flag_value="json", help="One JSON object per frame.")(
        function
    )
    function = click.option("--raw", "fmt", flag_value="raw", help="The exact recorded bytes.")(
        function
    )
    return click.option("--format", "fmt", type=formats, default="line", hidden=True)(function)


def _open(db: Path | None, ref: str | None) -> tuple[Any, int]:
    opened = open_ref(db, ref)
    return opened.db, opened.connection_id


def _writer(fmt: str, first_ns: int | None) -> Callable[[FrameRow], None]:
    if fmt == "raw":
        out = sys.stdout.buffer

        def raw(frame: FrameRow) -> None:
            out.write(frame.raw)

        return raw
    if fmt == "json":
        return lambda frame: click.echo(frame_json(frame, first_ns))

    def line(frame: FrameRow) -> None:
        click.echo(frame_line(frame, first_ns))
        if fmt == "pretty":
            click.echo(pretty_body(frame))

    return line


@click.command("ls")
@db_option
@click.option("-n", "--limit", type=click.IntRange(min=1, max=MAX_INT), default=20,
              show_default=True, help="How many of the newest connections to list.")  # fmt: skip
@click.option("--all", "show_all", is_flag=True, help="List every connection.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per connection.")
def ls_command(db: Path | None, limit: int, show_all: bool, as_json: bool) -> None:
    """List recorded connections and their sessions, oldest first.

    Each line: id, label, start time, agent <- client, protocol version, frames, prompt turns,
    duration, how the agent ended, and error responses. Sessions follow, indented.
    """
    database = store_read.open_for_reading(resolve_db(db))
    with quiet_pipe():
        for row in store_read.connections(database, None if show_all else limit):
            counts = store_read.counts(database, row.id)
            ended = row.ended_ns - row.started_ns if row.ended_ns is not None else None
            if ended is None and counts.first_ns is not None and counts.last_ns is not None:
                ended = counts.last_ns - counts.first_ns
            if as_json:
                record = {
                    "id": row.id, "uid": row.uid, "label": row.label, "started_ns": row.started_ns,
                    "agent": row.agent_info, "client": row.client_info,
                    "protocol_version": row.protocol_version, "frames": counts.frames,
                    "prompt_turns": counts.prompts,
                    "duration_ms": None if ended is None else ended / 1e6, "status": row.status,
                    "frames_lost": row.frames_lost,
                    "exit_code": row.exit_code, "exit_signal": row.exit_signal,
                    "errors": counts.errors, "malformed": counts.malformed,
                    "sessions": [s for s, _ in counts.sessions],
                }  # fmt: skip
                click.echo(json_visible(orjson.dumps(record).decode()))
                continue
            click.echo(connection_line(row, counts.frames, counts.prompts, counts.errors, ended))
            for session_id, prompts in counts.sessions:
                click.echo(f"       session {visible(str(session_id))}  {prompts} turns")


@click.command("show")
@db_option
@click.argument("ref", required=False)
@filter_options
@output_options
@click.option("--from", "from_seq", type=click.IntRange(min=-MAX_INT, max=MAX_INT), default=0,
              help="Start after this seq.")  # fmt: skip
@click.option("-n", "--limit", type=click.IntRange(min=1, max=MAX_INT),
              help="Show at most N frames.")  # fmt: skip
def show_command(
    db: Path | None, ref: str | None, fmt: str, from_seq: int, limit: int | None, **filters: Any
) -> None:
    """The frame timeline of a recording, one line per frame.

    Each line: seq, seconds since the first frame, direction (c2a client to agent, a2c agent
    to client, err agent stderr), kind, method, JSON-RPC id, update kind, stop reason, the
    latency of a response, and a preview. Lines stream as they are read.

    REF: a connection id, session id, label or uid; `last` (the default) is the newest.
    """
    database, connection_id = _open(db, ref)
    where = store_read.FrameFilter(**filters)
    write = _writer(fmt, store_read.first_mono_ns(database, connection_id))
    with quiet_pipe():
        for frame in store_read.frames(
            database, connection_id, where, after_seq=from_seq, limit=limit
        ):
            write(frame)
    row = store_read.connection(database, connection_id)
    if incomplete(row):  # on stderr: stdout holds only frames, whatever the format
        report(incomplete_note(row))


@click.command("tail")
@db_option
@click.argument("ref", required=False)
@filter_options
@output_options
@click.option("-n", "--lines", type=click.IntRange(min=0, max=MAX_INT), default=10,
              show_default=True, help="How many of the last frames to show first.")  # fmt: skip
@click.option("-f", "--follow", is_flag=True, help="Keep showing new frames until the agent exits.")
@click.option("--interval", type=click.FloatRange(min=0.01, max=MAX_SECONDS), default=0.2,
              show_default=True,
              help="Seconds between looks at the database while following.")  # fmt: skip
def tail_command(
    db: Path | None, ref: str | None, fmt: str, lines: int, follow: bool, interval: float,
    **filters: Any,
) -> None:  # fmt: skip
    """The last frames of a recording; with -f, follow it live.

    Run it in another terminal while an editor uses the proxy: `acp-proxy tail -f` follows
    the newest connection until its agent exits (or Ctrl-C).

    REF: a connection id, session id, label or uid; `last` (the default) is the newest.
    """
    database, connection_id = _open(db, ref)
    where = store_read.FrameFilter(**filters)
    write = _writer(fmt, store_read.first_mono_ns(database, connection_id))
    with quiet_pipe():
        # Where following starts: after the last frame shown, or (none shown) after the last
        # frame that existed before the first query. Never the newest frame at a later moment:
        # a frame committed in between would be skipped.
        seen = store_read.last_seq(database, connection_id)
        for frame in store_read.frames(database, connection_id, where, limit=lines, newest=True):
            write(frame)
            seen = frame.seq
        while follow:
            state = store_read.status(database, connection_id)  # read first: frames land before it
            fresh = list(store_read.frames(database, connection_id, where, after_seq=seen))
            for frame in fresh:
                write(frame)
                seen = frame.seq
            sys.stdout.flush()
            if not fresh and state != "running":
                return
            if not fresh:
                time.sleep(interval)


@click.command("stats")
@db_option
@click.argument("ref", required=False)
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per prompt turn (per method with --by-method).")  # fmt: skip
@click.option("--by-method", is_flag=True,
              help="Latency per JSON-RPC method and direction instead of per turn.")  # fmt: skip
def stats_command(db: Path | None, ref: str | None, as_json: bool, by_method: bool) -> None:
    """Timings of every prompt turn of a recording, or of every method (--by-method).

    Per turn: time to acceptance (the v2 prompt receipt; v1 has none), time to the first agent
    text, total duration, tool calls, permission requests and the time spent waiting for their
    answers, the stop reason, and usage where the agent reported it.

    With --by-method, per method and direction (c2a: the client asked, a2c: the agent asked):
    calls, error responses, unanswered requests, and the p50, p95, p99 and max latency from
    request to response. Percentiles are nearest-rank: always one of the measured latencies.

    REF: a connection id, session id, label or uid; `last` (the default) is the newest.
    """
    from acp_proxy.inspect.export import transcript_of

    database, connection_id = _open(db, ref)
    if by_method:
        _method_stats(database, connection_id, as_json)
        return
    view = transcript_of(database, connection_id)
    turns = [t for s in view.sessions for t in s.turns]
    with quiet_pipe():
        if as_json:
            for turn in turns:
                record = turn_record(turn)
                click.echo(json_visible(orjson.dumps(record).decode()))
            return
        if not turns:
            click.echo(f"connection {connection_id} has no prompt turns")
            return
        for text_line in table(STATS_HEADER, [turn_stats(t) for t in turns]):
            click.echo(text_line)


def _method_stats(database: Any, connection_id: int, as_json: bool) -> None:
    from acp_proxy.inspect.render.latency import HEADER, latency_rows
    from acp_proxy.protocol.latency import by_method

    summaries = by_method(store_read.calls(database, connection_id))
    with quiet_pipe():
        if as_json:
            for summary in summaries:
                click.echo(orjson.dumps(summary.as_record()).decode())
            return
        if not summaries:
            click.echo(f"connection {connection_id} has no requests")
            return
        for text_line in table(HEADER, latency_rows(summaries)):
            click.echo(text_line)
