"""``acp-proxy replay``: act as the recorded agent for a live client. Wiring only.

Rules:
- stdout carries only protocol bytes; the proxy's words (the closing summary) go to stderr.
- Exit status: 0 when the client saw exactly the recording (less notices), 1 when anything
  diverged (mismatch, differing answer, timeout, early end), 2 on usage errors (bad options,
  unknown REF, unreadable database): the same scheme as ``diff``. A signal (SIGINT, SIGTERM,
  SIGHUP) ends a replay as a client ends its agent, so 0 or 1 by the same scheme; it ends
  ``--to-agent`` with 128+N, as ``record`` reports signal N (docs/replay.md, "Signals").
- A client served from one recording runs in replay's plain shell (replay/shell/plain.py: one
  thread, no event loop to start); every form with an agent in the anyio shell
  (replay/shell/loop.py), imported after the recorder process is forked, so that the recorder
  does not carry the event loop's modules. Both make the same decisions
  (replay/shell/common.py).
- REF may be a bug-report bundle or a JSONL export (bundle.py): it is read from a temporary
  database; ``--record`` still records into ``--db``.
- Loading the recording and building the script make several objects per frame and no
  reference cycles: the cyclic garbage collector is off meanwhile (it would walk them again
  and again), and what they built is then frozen (``gc.freeze``, as ``record`` does), so that
  no later collection walks it either.
- With ``--record`` the replay is recorded like an agent behind ``record``, through the same
  pipeline (record/recording.py): the recorder process is forked before anything else
  starts, the summary becomes a stderr line of the recording, and the connection row gets the
  exit status.
- A recording file holding several episodes (a cassette, docs/testing.md) is replayed by
  following the episode the client matches (replay/episodes.py);
  ``--go-live -- AGENT`` lets a conversation no episode holds go on with that agent, and with
  ``--record`` the live part is recorded as one more connection, after the replay's own.
  A single recording without ``--go-live`` takes the plain engine and loop, as before.
- ``--to-agent`` on a file of several episodes drives each in turn, a fresh agent for each,
  and stops at the first that diverges.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from acp_proxy.cli.main import db_option, open_ref, report, resolve_db
from acp_proxy.cli.replay_plain import (
    EXIT_DIVERGED,
    EXIT_USAGE,
    SessionOfEpisodes,
    finish_recording,
    grace_ns,
    load_scripts,
    serve_one,
    start_recorder,
)
from acp_proxy.errors import AcpProxyError
from acp_proxy.protocol.acp import Direction

if TYPE_CHECKING:
    from acp_proxy.replay.engine import Options
    from acp_proxy.replay.match import Matcher
    from acp_proxy.replay.script import Script

MIN_FACTOR, MAX_FACTOR = 1e-6, 1e6
MAX_SECONDS = 10**6  # longer waits are refused as options (their nanoseconds must fit 64 bits)


def parse_timing(text: str) -> float | None:
    """``asap`` -> None, ``recorded`` -> 1.0, ``xN`` -> 1/N (N times as fast)."""
    if text == "asap":
        return None
    if text == "recorded":
        return 1.0
    if text.startswith("x"):
        try:
            factor = float(text[1:])
        except ValueError:
            factor = 0.0
        if MIN_FACTOR <= factor <= MAX_FACTOR:
            return 1.0 / factor
    raise click.BadParameter(
        f"{text!r}: use asap, recorded or xN (e.g. x2, x0.5; N from {MIN_FACTOR:g} to "
        f"{MAX_FACTOR:g})"
    )


@click.command(name="replay")
@db_option
@click.argument("ref")
@click.argument("agent_command", nargs=-1)
@click.option("--session", help="Replay only this session (and the connection's own frames).")
@click.option(
    "--timing", default="asap", show_default=True, metavar="asap|recorded|xN",
    help="Send agent frames as fast as causality allows, with the recorded gaps, or N times "
    "as fast as recorded.",
)  # fmt: skip
@click.option(
    "--max-gap", type=click.FloatRange(min=0, max=MAX_SECONDS), metavar="SECONDS",
    help="Cap every recorded gap at this many seconds.",
)  # fmt: skip
@click.option(
    "--on-mismatch", type=click.Choice(["error", "continue"]), default="error",
    show_default=True, help="On a client message the recording does not hold: answer with an "
    "error and stop, or answer with an error (or the same method's next recorded response) "
    "and go on.",
)  # fmt: skip
@click.option(
    "--ignore", multiple=True, metavar="JSONPATH",
    help="Leave this out when matching client messages, e.g. '$.params.mcpServers' "
    "(repeatable).",
)  # fmt: skip
@click.option("--record", is_flag=True, help="Record the replay itself in the database (with "
              "--listen: every connection it serves, as record --listen records one).")  # fmt: skip
@click.option(
    "--to-agent", is_flag=True, help="Act as the recorded client instead, for the agent started "
    "by AGENT_COMMAND (after --): exits 1 when it diverges from the recording.",
)  # fmt: skip
@click.option(
    "--go-live", is_flag=True, help="When the client leaves every recorded episode, catch the "
    "agent started by AGENT_COMMAND (after --) up with the conversation so far and go on with "
    "it live; with --record the live part is recorded as a new connection.",
)  # fmt: skip
@click.option(
    "--listen", metavar="HOST:PORT", help="Be a remote agent instead: serve the recording on "
    "HOST:PORT over Streamable HTTP and WebSocket (port 0 picks a free one), one replay per "
    "connection, until SIGINT or SIGTERM (see docs/remote.md).",
)  # fmt: skip
@click.option(
    "--timeout", type=click.FloatRange(min=0, max=MAX_SECONDS, min_open=True), default=30.0,
    show_default=True,
    metavar="SECONDS", help="Longest wait for any message the client is expected to send.",
)  # fmt: skip
def replay_command(
    db: Path | None, ref: str, session: str | None, timing: str, max_gap: float | None,
    on_mismatch: str, ignore: tuple[str, ...], record: bool, to_agent: bool, go_live: bool,
    listen: str | None, timeout: float, agent_command: tuple[str, ...],
) -> None:  # fmt: skip
    """Act as the agent of recording REF for the client that runs this command.

    Use it as the agent command of an ACP client:

        acp-proxy replay my-label

    Each client request is answered with the recorded response to the matching recorded
    request (method and params, ids, _meta and cwd aside), with the client's id; the agent
    frames that followed are sent in recorded order, byte for byte, and recorded agent
    requests are re-issued. Live-only notices are dropped. Ends with a summary on stderr;
    exits 1 if the client diverged from the recording, 2 on usage errors (see docs/replay.md).

    With --to-agent it plays the recorded client for a live agent instead:

        acp-proxy replay --to-agent my-label -- my-agent --acp

    and reports the first agent frame that differs from the recording (see docs/testing.md).

    A JSONL file of several episodes (a cassette) is replayed by following the episode the
    client's conversation matches; with --go-live a conversation no episode holds goes on
    with the agent after --, caught up with what the client was told.

    With --listen HOST:PORT it serves remote clients instead, each connection a replay of its
    own; it exits 1 if any diverged (or none came), when SIGINT or SIGTERM stops it. With
    --record each connection it serves is recorded in --db, exchanges and streams included.
    """
    if listen is not None and (to_agent or go_live or agent_command):
        raise click.UsageError("--listen takes no agent command, --to-agent or --go-live")
    if go_live and (to_agent or not agent_command):
        raise click.UsageError("--go-live needs the agent command after -- (and no --to-agent)")
    if to_agent or (agent_command and not go_live):
        if session or max_gap is not None or timing != "asap" or on_mismatch != "error":
            raise click.UsageError("--session, --timing, --max-gap and --on-mismatch "
                                   "do not apply to --to-agent")  # fmt: skip
        _to_agent(db, ref, agent_command, ignore, record, timeout)
    from acp_proxy.replay.engine import Options
    from acp_proxy.replay.match import Matcher

    scale = parse_timing(timing)
    try:
        matcher = Matcher(ignore)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--ignore") from error
    db_path = resolve_db(db)
    options = Options(
        scale=scale,
        max_gap_ns=None if max_gap is None else int(max_gap * 1e9),
        on_mismatch=on_mismatch,
        timeout_ns=int(timeout * 1e9),
    )
    try:
        loaded = load_scripts(db_path, ref, session, matcher)
    except SessionOfEpisodes as error:
        raise click.UsageError(str(error)) from None
    except AcpProxyError as error:
        report(str(error))
        sys.exit(EXIT_USAGE)
    scripts = [script for script, _ in loaded]
    what = loaded[0][1]
    if listen is not None:
        shown = what if len(scripts) == 1 else ref
        _listen(listen, scripts, shown, matcher, options, db_path if record else None)
    if len(scripts) > 1 or go_live:
        what = f"{ref}" if len(scripts) > 1 else what
        live = agent_command if go_live else None
        _serve_episodes(db_path, scripts, what, matcher, options, record, live, ignore)
    script = scripts[0]
    del scripts, loaded
    serve_one(db_path, script, what, matcher, options, record)


def _listen(
    listen: str, scripts: list[Script], what: str, matcher: Matcher, options: Options,
    record_to: Path | None,
) -> None:  # fmt: skip
    """``--listen``: serve the recording to remote clients until a signal, recording each
    connection into ``record_to`` when given (through the listener's hub); exits."""
    from acp_proxy.remote import missing_extra
    from acp_proxy.remote.listen_address import (
        AddressError,
        bind,
        endpoint_url,
        is_loopback,
        parse_listen,
    )  # fmt: skip

    missing = missing_extra()
    if missing is not None:
        report(missing)
        sys.exit(EXIT_USAGE)
    try:
        host, port = parse_listen(listen)
        sock = bind(host, port)
    except AddressError as error:
        report(str(error))
        sys.exit(EXIT_USAGE)
    recording = None
    if record_to is not None:  # forked before the event loop, as record --listen does
        from acp_proxy.record.defaults import DEFAULT_MAX_WAIT
        from acp_proxy.record.hub import RecordingHub
        from acp_proxy.remote.replay_recording import ReplayRecording

        hub = RecordingHub.start(record_to, report, close_in_child=[sock.fileno()])
        argv = ["acp-proxy", *sys.argv[1:]]
        recording = ReplayRecording(hub, DEFAULT_MAX_WAIT, argv, endpoint_url(sock))
    from acp_proxy.remote.replay_listen import listener_for
    from acp_proxy.remote.replay_server import serve

    listener = listener_for(scripts, what, matcher, options, report, recording)
    if not is_loopback(host):
        report(f"warning: listening on {host}, not loopback: anyone who reaches it is served")
    report(f"listening on {endpoint_url(sock)}")
    try:
        serve(listener, sock)
    finally:
        outcome = None if recording is None else recording.hub.finish()
    failed = outcome in ("failed", "died")
    sys.exit(EXIT_DIVERGED if listener.diverged or failed else 0)


def _serve_episodes(
    db_path: Path, scripts: list[Script], what: str, matcher: Matcher, options: Options,
    record: bool, agent: tuple[str, ...] | None, ignore: tuple[str, ...],
) -> None:  # fmt: skip
    """Replay following episodes, going live with ``agent`` if given (see the rules); exits."""
    from acp_proxy.replay.episodes import Episodes
    from acp_proxy.replay.modes import ForEpisodes
    from acp_proxy.replay.report import episodes_summary

    clock_origin = (time.monotonic_ns(), time.time_ns())
    recorder = start_recorder(db_path, clock_origin) if record else None
    from acp_proxy.replay.shell.loop import serve  # after the fork: the recorder stays small

    engine = Episodes(
        scripts, matcher, options, time.monotonic_ns(), live=agent is not None, ignore=ignore
    )
    chunks: list[tuple[Direction, int, bytes]] = []

    def keep(direction: Direction, now: int, chunk: bytes) -> None:
        chunks.append((direction, now, chunk))

    outcome = serve(ForEpisodes(engine), options.timeout_ns, grace_ns(options.timeout_ns),
                    agent_argv=agent, tap=recorder.tap if recorder else None,
                    agent_log=keep)  # fmt: skip
    text = episodes_summary(engine, what)
    report(text)
    status = EXIT_DIVERGED if engine.diverged else 0
    finish_recording(recorder, text, status)
    live = engine.live
    if record and agent and live is not None and live.caught_up:
        new = _record_live(db_path, agent, chunks, clock_origin, outcome.agent_returncode)
        if new is None:
            report("the live conversation was not recorded")
            sys.exit(EXIT_DIVERGED)
        report(f"the live conversation is recorded as connection {new} in {db_path}")
    sys.exit(status)


def _record_live(
    db_path: Path, agent: tuple[str, ...], chunks: list[tuple[Direction, int, bytes]],
    clock_origin: tuple[int, int], exit_code: int | None,
) -> int | None:  # fmt: skip
    """The live part of a ``--go-live`` run, recorded through the one recording pipeline."""
    from acp_proxy.record.recording import Recording

    wall_minus_mono = clock_origin[1] - clock_origin[0]
    first_ns = chunks[0][1] + wall_minus_mono if chunks else None
    recording = Recording.start(
        db_path, agent, report, clock_origin=clock_origin, started_ns=first_ns, max_wait=None
    )
    for chunk in chunks:
        recording.put(*chunk)
    last_ns = chunks[-1][1] + wall_minus_mono if chunks else None
    outcome = recording.finish(exit_code=exit_code, ended_ns=last_ns, what="the live recording")
    return None if outcome in ("failed", "died") else recording.connection_id()


def _to_agent(
    db: Path | None, ref: str, argv: tuple[str, ...], ignore: tuple[str, ...], record: bool,
    timeout: float,
) -> None:  # fmt: skip
    """``--to-agent``: play the recorded client for the agent ``argv``; exits."""
    from acp_proxy.protocol.normalize import parse_path
    from acp_proxy.replay.drive import Drive
    from acp_proxy.replay.drive import report as drive_report
    from acp_proxy.replay.modes import ForAgent
    from acp_proxy.store.replay_reads import load

    if not argv:
        raise click.UsageError("--to-agent needs the agent command after --")
    try:
        for path in ignore:
            parse_path(path)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--ignore") from error
    db_path = resolve_db(db)
    try:
        opened = open_ref(db, ref, episodes=True)
        opened.db.close()
        loaded = [load(opened.path, str(t.connection_id)) for t in opened.targets]
    except AcpProxyError as error:
        report(str(error))
        sys.exit(EXIT_USAGE)
    timeout_ns = int(timeout * 1e9)
    for number, (target, frames) in enumerate(loaded, start=1):
        what = f"connection {target.connection_id}"
        what += f" ({target.label})" if target.label else ""
        if len(loaded) > 1:
            what = f"episode {number} of {len(loaded)} ({what})"
        drive = Drive(frames, ignore)
        clock_origin = (time.monotonic_ns(), time.time_ns())
        recorder = start_recorder(db_path, clock_origin) if record else None
        from acp_proxy.replay.shell.loop import serve  # after the fork: the recorder stays small

        mode = ForAgent(drive, timeout_ns, time.monotonic_ns())
        outcome = serve(mode, timeout_ns, grace_ns(timeout_ns), agent_argv=argv,
                        agent_log=recorder.tap.put if recorder else None)  # fmt: skip
        if mode.spawn_failure is not None:
            report(mode.spawn_failure)
            sys.exit(EXIT_USAGE)
        text = drive_report(drive, what)
        status = EXIT_DIVERGED if drive.divergence is not None else 0
        if outcome.signal is not None:  # interrupted: neither a yes nor a no
            text += f" Ended: {mode.ending}."
            status = 128 + outcome.signal
        report(text)
        if recorder is not None:
            recorder.finish(exit_code=status, what="the run's recording")
        if status:
            sys.exit(status)
    sys.exit(0)
