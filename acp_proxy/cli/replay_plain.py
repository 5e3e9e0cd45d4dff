"""``acp-proxy replay`` serving a client from recordings, without the command-line library.

Rules:
- What ``replay REF`` does once its options are read: load the scripts (``load_scripts``) and
  serve one recording (``serve_one``) in replay's plain shell (replay/shell/plain.py: no event
  loop). cli/replay.py calls both after click has read the options; cli/entry.py calls
  ``replay_early`` for the unambiguous ``replay [--db DB] [--record] REF`` before click is
  imported, so that the client's first answer does not wait for it (the pytest plugin pays
  replay's start-up per test).
- ``replay_early`` is given a command line that means exactly what the command's defaults mean
  (tests/cli/test_replay_early.py compares them with the click command's); a REF that turns out
  to hold several episodes (a cassette) is handed to the command line as it came, before a
  byte of the client is read.
- Loading makes several objects per frame and no reference cycles: the cyclic garbage
  collector is off meanwhile, and what it built is then frozen (``gc.freeze``, as ``record``
  does), so that no later collection walks it. ``replay_early`` turns it off before its first
  import (importing builds no garbage either), and on again once the scripts are loaded.
- Imports no click (tests/cli/test_import_sets.py).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from acp_proxy.errors import AcpProxyError
from acp_proxy.protocol.acp import Direction
from acp_proxy.stderr import report

if TYPE_CHECKING:
    from acp_proxy.record.recording import Recording
    from acp_proxy.replay.engine import Options
    from acp_proxy.replay.match import Matcher
    from acp_proxy.replay.script import Script

EXIT_DIVERGED, EXIT_USAGE = 1, 2
DEFAULT_TIMEOUT_S = 30.0  # the command's --timeout default


class SessionOfEpisodes(AcpProxyError):
    """``--session`` asked of a recording file of several episodes."""


def load_scripts(
    db_path: Path, ref: str, session: str | None, matcher: Matcher
) -> list[tuple[Script, str]]:
    """The replay script of each episode ``ref`` names, and its name for the summary."""
    from acp_proxy.store.refs import open_ref

    collecting = gc.isenabled()
    gc.disable()  # see the module rules
    try:
        opened = open_ref(ref, db_path, episodes=True, sessions=True)
        opened.db.close()
        if len(opened.targets) > 1 and session:
            raise SessionOfEpisodes("--session needs a recording of a single episode")
        loaded = [
            script_of(opened.path, str(t.connection_id), session or t.session_id, matcher)
            for t in opened.targets
        ]
        gc.freeze()
        return loaded
    finally:
        if collecting:
            gc.enable()


def script_of(source: Path, ref: str, session: str | None, matcher: Matcher) -> tuple[Script, str]:
    """The replay script of ``ref`` (narrowed to a session), and its name for the summary."""
    from acp_proxy.replay.script import as_lines, build, select_session
    from acp_proxy.store.replay_reads import load_script
    from acp_proxy.store.replay_rows import RecordedFrame

    target, rows, remote = load_script(source, ref, session)
    session = session or target.session_id
    what = f"connection {target.connection_id}"
    what += f" ({target.label})" if target.label else ""
    if session is not None:  # then every row is a RecordedFrame (load_script)
        frames = [f for f in rows if isinstance(f, RecordedFrame)]
        if not any(f.session_id == session for f in frames):
            report(f"{what} has no session {session!r}")
            sys.exit(EXIT_USAGE)
        rows = list(select_session(frames, session))
        del frames
        what += f", session {session}"
    script = build(rows, matcher)
    # A remote connection's frames have no line breaks: replayed to a stdio client, each
    # becomes a line.
    return (as_lines(script) if remote else script), what


def serve_one(
    db_path: Path, script: Script, what: str, matcher: Matcher, options: Options, record: bool
) -> NoReturn:
    """Serve the client on fds 0 and 1 from ``script``; say the summary, exit with its status."""
    from acp_proxy.replay.engine import Replay
    from acp_proxy.replay.modes import ForClient
    from acp_proxy.replay.report import exit_status, summary

    clock_origin = (time.monotonic_ns(), time.time_ns())
    recorder = start_recorder(db_path, clock_origin) if record else None
    from acp_proxy.replay.shell.plain import serve_client  # no agent: no event loop

    replay = Replay(script, matcher, options, time.monotonic_ns())
    del script
    serve_client(ForClient(replay), options.timeout_ns, grace_ns(options.timeout_ns),
                 tap=recorder.tap if recorder else None)  # fmt: skip
    text = summary(replay, what)
    report(text)
    status = exit_status(replay)
    finish_recording(recorder, text, status)
    sys.exit(status)


def replay_early(args: Sequence[str], db: str | None, ref: str, record: bool) -> NoReturn:
    """``replay [--db DB] [--record] REF`` with every other option at its default (``args``:
    the whole command line, for the command line to take over a cassette); exits.

    Errors end it as the command line ends a command (cli/main.py): a REF or file that cannot
    be used, or a SQLite error met reading it, in one line and exit 2; any other of ours in one
    line and exit 1.
    """
    gc.disable()  # see the module rules
    from acp_proxy.cli.endings import said_and_status

    try:
        _replay_early(args, db, ref, record)
    except Exception as error:
        status = said_and_status(error)
        if status is None:
            raise
        sys.exit(status)


def _replay_early(args: Sequence[str], db: str | None, ref: str, record: bool) -> NoReturn:
    from acp_proxy.paths import default_db_path
    from acp_proxy.replay.engine import Options
    from acp_proxy.replay.match import Matcher

    db_path = Path(db) if db else default_db_path()
    matcher = Matcher(())
    options = Options(scale=None, max_gap_ns=None, on_mismatch="error",
                      timeout_ns=int(DEFAULT_TIMEOUT_S * 1e9))  # fmt: skip
    try:
        loaded = load_scripts(db_path, ref, None, matcher)
    except AcpProxyError as error:
        report(str(error))
        sys.exit(EXIT_USAGE)
    gc.enable()
    if len(loaded) > 1:  # a cassette: the episodes' engine, as the command line runs it
        del loaded
        from acp_proxy.cli.main import main

        main(args=list(args))
        sys.exit(0)
    ((script, what),) = loaded
    del loaded
    serve_one(db_path, script, what, matcher, options, record)


def grace_ns(timeout_ns: int) -> int:
    """How long the agent (and after a signal, the whole run) has to end: at most the timeout."""
    from acp_proxy.record.defaults import DEFAULT_GRACE

    return min(timeout_ns, int(DEFAULT_GRACE * 1e9))


def start_recorder(db_path: Path, clock_origin: tuple[int, int]) -> Recording:
    from acp_proxy.record.recording import Recording

    return Recording.start(db_path, ["acp-proxy", *sys.argv[1:]], report, clock_origin=clock_origin)


def finish_recording(recorder: Recording | None, text: str, status: int) -> None:
    """The replay's own recording: its summary as a stderr line, its exit status; then flush."""
    if recorder is None:
        return
    line = f"acp-proxy: {text}\n".encode()
    recorder.put(Direction.AGENT_STDERR, time.monotonic_ns(), line)
    recorder.finish(exit_code=status, what="the replay's recording")
