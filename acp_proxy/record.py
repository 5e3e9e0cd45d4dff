"""``record``: one proxied connection, from spawning the agent to the last committed frame.

Rules:
- The agent is spawned before anything slow happens (opening the database, starting the event
  loop), so the proxy adds as little as possible to the agent's start-up.
- Recording never blocks forwarding except through the tap's byte bound; a recording that
  fails is reported once and forwarding goes on (see recorder.py).
- An agent that cannot start gets the shell's exit status (127 not found, 126 not executable),
  a one-line message and, where the database works, a connection row that says so.
- After the agent has exited, the recorder gets ``flush_deadline`` seconds to commit the rest.
- The exit status is the agent's (128+N for signal N).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .early import EarlyAgent
from .errors import RecordingError
from .spawn import SpawnFailed, pass_signals_to, spawn_agent

FLUSH_DEADLINE = 30.0
Reporter = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class RecordOptions:
    agent_argv: Sequence[str]
    db_path: Path
    label: str | None = None
    grace: float = 5.0
    flush_deadline: float = FLUSH_DEADLINE


def record(options: RecordOptions, report: Reporter, early: EarlyAgent | None = None) -> int:
    """Run the agent behind the proxy, recording everything; return the exit status.

    ``early`` is the agent when entry.py already started it (same command).
    """
    clock_origin = (time.monotonic_ns(), time.time_ns())
    if early is not None:
        process, failure = early.process, early.failure
    else:
        try:
            process, failure = spawn_agent(options.agent_argv), None
        except SpawnFailed as error:
            process, failure = None, error
        if process is not None:
            pass_signals_to(process)
    if failure is not None or process is None:
        assert failure is not None
        report(str(failure))
        _record_spawn_failure(options, str(failure), clock_origin[1], report)
        return failure.exit_status

    from .recorder_process import start_recorder_process
    from .store import NewConnection

    new = NewConnection(
        argv=options.agent_argv, cwd=os.getcwd(), proxy_version=__version__,
        proxy_pid=os.getpid(), label=options.label, started_ns=clock_origin[1],
    )  # fmt: skip
    pipes = (process.stdin, process.stdout, process.stderr)
    recorder = start_recorder_process(
        options.db_path, new, clock_origin, report,
        conversation_fds=[pipe.fileno() for pipe in pipes if pipe is not None],
    )  # fmt: skip
    recorder.tap.update(agent_pid=process.pid)
    from .forward import Forwarding

    forwarding = Forwarding(process, recorder.tap, report)

    # Imported once bytes already flow: the agent starts while these load.
    import anyio

    from .relay import relay

    try:
        ended = anyio.run(
            functools.partial(relay, process, forwarding, report, grace=options.grace)
        )
    finally:
        if process.returncode is None:  # the relay itself failed: do not leave the agent behind
            process.kill()
            process.wait()
    recorder.tap.update(
        status="exited" if ended.signal is None else "signalled",
        ended_ns=time.time_ns(), exit_code=ended.exit_code, exit_signal=ended.signal,
    )  # fmt: skip
    if recorder.finish(options.flush_deadline) is None:
        report(
            f"the recording was still being written {options.flush_deadline:g}s after the "
            f"agent exited; it goes on in the background (pid {recorder.pid})"
        )
    return ended.exit_status


def _record_spawn_failure(
    options: RecordOptions, error: str, started_ns: int, report: Reporter
) -> None:
    from .store import NewConnection, RecordingWriter, connect

    new = NewConnection(
        argv=options.agent_argv, cwd=os.getcwd(), proxy_version=__version__,
        proxy_pid=os.getpid(), label=options.label, started_ns=started_ns,
    )  # fmt: skip
    try:
        db = connect(options.db_path)
        try:
            writer = RecordingWriter.start(db, new)
            writer.update(status="spawn_failed", error=error, ended_ns=time.time_ns())
        finally:
            db.close()
    except RecordingError as failure:
        report(f"{failure}; the failed start was not recorded")
