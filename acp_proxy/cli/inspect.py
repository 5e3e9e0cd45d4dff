"""Reading commands: ``ls``, ``show``, ``tail`` and ``stats``. Wiring only.

Rules:
- Recordings are opened read-only by the REF opener (store/refs.py); a missing or unusable
  database, file or REF is one line on stderr and exit status 2 (reported by cli/main.py).
- Recorded text reaches the terminal only through ``display.visible`` (the renderers call it).
- Output streams: each frame line is written as soon as it is read, so the first page of a
  huge recording shows at once; a closed pipe (``| head``) ends the command quietly.
- Terminal conventions (cli/terminal.py): colour only on a terminal unless ``--color`` or
  ``NO_COLOR`` say otherwise, lines cut to the terminal's width, long output paged.
- The proxy's own remarks ("no frames matched", which connection ``tail`` follows) go to
  stderr, so stdout holds only frames.
- ``tail -f`` on a remote connection being recorded holds back a frame whose stream is not
  committed yet (the recorder commits it just after the frame) for at most
  ``CARRIER_POLLS`` looks, so that each line says its stream.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from acp_proxy.cli.main import db_option, open_ref, report, resolve_db
from acp_proxy.cli.terminal import color_option, paged, pager_option, width
from acp_proxy.display import json_visible, visible
from acp_proxy.errors import AcpProxyError
from acp_proxy.inspect.render import words as present
from acp_proxy.inspect.render.text import (
    STATS_HEADER,
    connection_line,
    fit,
    frame_json,
    frame_line,
    incomplete,
    incomplete_note,
    pretty_body,
    table,
    turn_record,
    turn_stats,
)
from acp_proxy.plural import counted
from acp_proxy.store import readers as store_read
from acp_proxy.store.values import FrameRow

F = TypeVar("F", bound=Callable[..., Any])
MAX_INT = 2**63 - 1  # what SQLite holds: larger numbers are refused as options
MAX_SECONDS = 10**6
CARRIER_POLLS = 10  # looks a live remote frame waits for its stream row before it is shown


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
        click.option("--grep", "text", metavar="TEXT", help="Only frames whose raw bytes contain "
                     "TEXT (ASCII letters match either case)."),
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


def _writer(
    fmt: str, first_ns: int | None, columns: int | None = None
) -> Callable[[FrameRow], None]:
    if fmt == "raw":
        out = sys.stdout.buffer

        def raw(frame: FrameRow) -> None:
            out.write(frame.raw)

        return raw
    if fmt == "json":
        return lambda frame: click.echo(frame_json(frame, first_ns))

    def line(frame: FrameRow) -> None:
        click.echo(frame_line(frame, first_ns, columns))
        if fmt == "pretty":
            click.echo(pretty_body(frame))

    return line


@click.command("ls")
@db_option
@click.option("-n", "--limit", type=click.IntRange(min=1, max=MAX_INT), default=20,
              show_default=True, help="How many of the newest connections to list.")  # fmt: skip
@click.option("--all", "show_all", is_flag=True, help="List every connection.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per connection.")
@color_option
@pager_option
def ls_command(db: Path | None, limit: int, show_all: bool, as_json: bool, no_pager: bool) -> None:
    """List recorded connections and their sessions, oldest first.

    Each line: id, label, start time, agent <- client, protocol version, how it was carried
    (for remote agents: http or websocket and the client's address; a stdio bridge to one),
    frames, prompt turns, duration, how the agent ended, and error responses. A peer that did
    not name itself is named by its command (an interpreter's script, not the interpreter), a
    remote agent by its URL. Sessions follow, indented; the last line says where the database
    is and its size (see `delete` and `prune`). On a terminal lines are cut to its width and
    long output goes through $PAGER.
    """
    from acp_proxy.cli.tidy import human_bytes
    from acp_proxy.store.tidy import database_bytes

    db_path = resolve_db(db)
    database = store_read.open_for_reading(db_path)
    columns = None if as_json else width()  # read before the pager takes stdout
    with paged(not no_pager and not as_json), quiet_pipe():
        _ls(database, limit, show_all, as_json, columns)
        if not as_json:
            total = store_read.connection_count(database)
            size = database_bytes(db_path)
            held = f"{counted(total, 'connection')}, {human_bytes(size)}"
            click.echo(_fitted(f"{visible(str(db_path))}: {held}", columns))


def _fitted(line: str, columns: int | None) -> str:
    return line if columns is None else fit(line, columns)


def _ls(
    database: Any, limit: int, show_all: bool, as_json: bool, columns: int | None = None
) -> None:
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
                "transport": row.transport, "remote_url": row.remote_url,
                "client_address": row.client_address,
            }  # fmt: skip
            click.echo(json_visible(orjson.dumps(record).decode()))
            continue
        line = connection_line(row, counts.frames, counts.prompts, counts.errors, ended)
        click.echo(_fitted(line, columns))
        for session_id, prompts in counts.sessions:
            session = f"       session {visible(str(session_id))}  {counted(prompts, 'turn')}"
            click.echo(_fitted(session, columns))


def _say_if_none(shown: int) -> None:
    if not shown:
        report("no frames matched")


@click.command("show")
@db_option
@click.argument("ref", required=False)
@filter_options
@output_options
@click.option("--from", "from_seq", type=click.IntRange(min=0, max=MAX_INT), default=None,
              help="Start at this seq (inclusive).")  # fmt: skip
@click.option("--to", "to_seq", type=click.IntRange(min=0, max=MAX_INT), default=None,
              help="End at this seq (inclusive).")  # fmt: skip
@click.option("-n", "--limit", type=click.IntRange(min=1, max=MAX_INT),
              help="Show at most N frames.")  # fmt: skip
@color_option
@pager_option
def show_command(
    db: Path | None, ref: str | None, fmt: str, from_seq: int | None, to_seq: int | None,
    limit: int | None, no_pager: bool, **filters: Any,
) -> None:  # fmt: skip
    """The frame timeline of a recording, one line per frame.

    Each line: seq, seconds since the first frame, direction (c2a client to agent, a2c agent
    to client, err agent stderr), kind, method, JSON-RPC id, update kind, stop reason, the
    latency of a response, and a preview; a remote connection's frames also say, after the
    direction, which stream carried them (`post#3 202`: the body of HTTP exchange 3, a POST
    answered 202; `answer#1 200`, `conn-sse#2`, `sess-sse#4`, `ws#1`; see docs/remote.md).
    Lines stream as they are read; on a terminal they
    are cut to its width and long output goes through $PAGER. Nothing matched: "no frames
    matched" on stderr (exit status 0).

    REF: a connection id, session id, label or uid; `last` (the default) is the newest.
    """
    database, connection_id = _open(db, ref)
    where = store_read.FrameFilter(**filters)
    after = 0 if from_seq is None else from_seq - 1
    shown = 0
    columns = width()  # read before the pager takes stdout
    with paged(not no_pager and fmt != "raw"):
        write = _writer(fmt, store_read.first_mono_ns(database, connection_id), columns)
        with quiet_pipe():
            for frame in store_read.frames(
                database, connection_id, where, after_seq=after, limit=limit, until_seq=to_seq
            ):
                write(frame)
                shown += 1
    _say_if_none(shown)
    row = store_read.connection(database, connection_id)
    if incomplete(row):  # on stderr: stdout holds only frames, whatever the format
        report(incomplete_note(row))


def _following(database: Any, connection_id: int) -> None:
    row = store_read.connection(database, connection_id)
    label = f" ({row.label})" if row.label else ""
    said = (
        f"following connection {connection_id}{label}, started {present.wall(row.started_ns)}, "
        f"agent {present.peer(row.agent_info, row.argv)}"
    )
    report(visible(said))


def _wait_for_database(path: Path, interval: float) -> Any:
    """The database at ``path``, once it exists and can be read."""
    said = False
    while True:
        if path.exists():
            try:
                database = store_read.open_for_reading(path)
                if store_read.holds_recordings(database):
                    return database
                database.close()
            except AcpProxyError:
                pass  # being created right now
        if not said:
            report(f"waiting for {path} to be created (Ctrl-C to stop)")
            said = True
        time.sleep(interval)


def _next_connection(database: Any, after_id: int, interval: float) -> int:
    """The first connection newer than ``after_id``, waiting until one starts."""
    found = store_read.connection_after(database, after_id)
    if found is None:
        report("waiting for the next connection (Ctrl-C to stop)")
    while found is None:
        time.sleep(interval)
        found = store_read.connection_after(database, after_id)
    return found


def _follow(
    database: Any, connection_id: int, where: store_read.FrameFilter,
    write: Callable[[FrameRow], None], seen: int, interval: float,
) -> None:  # fmt: skip
    """Write the frames after ``seen`` as they are recorded, until the connection ends."""
    remote = store_read.connection(database, connection_id).remote
    held = 0  # looks so far at a frame without its stream
    while True:
        state = store_read.status(database, connection_id)  # read first: frames land before it
        fresh = list(store_read.frames(database, connection_id, where, after_seq=seen))
        ready = fresh
        if remote and state == "running" and held < CARRIER_POLLS:
            ready = list(itertools.takewhile(lambda frame: frame.carrier is not None, fresh))
        held = held + 1 if len(ready) < len(fresh) else 0
        for frame in ready:
            write(frame)
            seen = frame.seq
        sys.stdout.flush()
        if not fresh and state != "running":
            return
        if len(ready) < len(fresh) or not fresh:
            time.sleep(interval)


@click.command("tail")
@db_option
@click.argument("ref", required=False)
@filter_options
@output_options
@click.option("-n", "--lines", type=click.IntRange(min=0, max=MAX_INT), default=10,
              show_default=True, help="How many of the last frames to show first.")  # fmt: skip
@click.option("-f", "--follow", is_flag=True, help="Keep showing new frames until the agent exits.")
@click.option(
    "--wait",
    is_flag=True,
    help="Wait for the next connection to start, then follow it (implies -f).",
)
@click.option(
    "--follow-all",
    is_flag=True,
    help="When the followed connection ends, wait for the next one and follow it "
    "too, until Ctrl-C (implies -f).",
)
@click.option("--interval", type=click.FloatRange(min=0.01, max=MAX_SECONDS), default=0.2,
              show_default=True,
              help="Seconds between looks at the database while following.")  # fmt: skip
@color_option
def tail_command(
    db: Path | None, ref: str | None, fmt: str, lines: int, follow: bool, wait: bool,
    follow_all: bool, interval: float, **filters: Any,
) -> None:  # fmt: skip
    """The last frames of a recording; with -f, follow it live.

    Run it in another terminal while an editor uses the proxy: `acp-proxy tail -f` follows
    the newest connection until its agent exits, `tail --wait` waits for the next connection
    to start (run it before the editor starts the agent), `tail --follow-all` goes on from
    one connection to the next. Which connection is followed is said on stderr. Ctrl-C ends
    it (exit status 0).

    REF: a connection id, session id, label or uid; `last` (the default) is the newest.
    """
    if wait and ref is not None:
        raise click.UsageError("--wait follows the next connection to start: give no REF")
    follow = follow or wait or follow_all
    where = store_read.FrameFilter(**filters)
    try:
        if wait:
            database = _wait_for_database(resolve_db(db), interval)
            start = store_read.newest_connection_id(database)
            connection_id, lines = _next_connection(database, start, interval), -1
        else:
            database, connection_id = _open(db, ref)
        _tail(database, connection_id, where, fmt, lines, follow, follow_all, interval)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        sys.exit(0)


def _tail(
    database: Any, connection_id: int, where: store_read.FrameFilter, fmt: str, lines: int,
    follow: bool, follow_all: bool, interval: float,
) -> None:  # fmt: skip
    """Show the last ``lines`` frames (all when negative) and follow as asked."""
    with quiet_pipe():
        while True:
            write = _writer(fmt, store_read.first_mono_ns(database, connection_id), width())
            # Where following starts: after the last frame shown, or (none shown) after the
            # last frame that existed before the first query. Never the newest frame at a
            # later moment: a frame committed in between would be skipped.
            seen = store_read.last_seq(database, connection_id) if lines >= 0 else 0
            shown = 0
            last = None if lines < 0 else lines
            for frame in store_read.frames(database, connection_id, where, limit=last,
                                           newest=lines >= 0):  # fmt: skip
                write(frame)
                seen, shown = frame.seq, shown + 1
            if not follow:
                _say_if_none(shown)
                return
            running = store_read.status(database, connection_id) == "running"
            if running or lines < 0:
                _following(database, connection_id)
            _follow(database, connection_id, where, write, seen, interval)
            if not follow_all:
                if not running and lines >= 0:
                    report(
                        f"connection {connection_id} has ended; "
                        "`acp-proxy tail --wait` follows the next one to start"
                    )
                return
            report(f"connection {connection_id} ended")
            connection_id, lines = _next_connection(database, connection_id, interval), -1


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
