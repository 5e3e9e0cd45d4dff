"""``record``: one proxied connection, from spawning the agent to the last committed frame.

Rules:
- The agent is launched (launch.py: spawned, recorder forked and told where to record, bytes
  flowing) before anything slow happens (the database, in the recorder process), so the proxy
  adds as little as possible to the agent's start-up.
- Recording never blocks forwarding except through the recorder's byte bound (see
  chunk_queue.py); a recording that fails is reported once and forwarding goes on.
- An agent that cannot start gets the shell's exit status (127 not found, 126 not executable),
  a one-line message and, where the database works, a connection row that says so.
- After the agent has exited, the recorder gets ``flush_deadline`` seconds to commit the rest;
  how the recording ended is said by ``Recording.finish`` (recording.py), as for every
  recording.
- The exit status is the agent's (128+N for signal N).
- ``--ui`` starts ``acp-proxy ui`` as a child process once bytes flow: it gets no stdin and no
  stdout (the protocol channel), only stderr for its address, and reads the database on its
  own; it ends when the proxy does. It cannot fail the recording: a failure is said once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.errors import RecordingError
from acp_proxy.record.defaults import DEFAULT_GRACE, DEFAULT_MAX_WAIT
from acp_proxy.record.launch import Launched, launch
from acp_proxy.record.recording import FLUSH_DEADLINE, connection_settings
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.recorder import SinkFactory


@dataclass(frozen=True, slots=True)
class RecordOptions:
    agent_argv: Sequence[str]
    db_path: Path
    label: str | None = None
    grace: float = DEFAULT_GRACE
    check: bool = False
    ui: bool = False
    flush_deadline: float = FLUSH_DEADLINE
    otlp: str | None = None  # ``--otlp [URL]``: "" for the environment's endpoint
    otlp_content: bool = False
    max_recorder_wait: float = DEFAULT_MAX_WAIT
    sinks: SinkFactory | None = None  # the command line's sinks (cli/sinks.py)

    def otlp_settings(self) -> dict[str, object] | None:
        """What the recorder process needs to export spans live, or None."""
        if self.otlp is None:
            return None
        return {"endpoint": self.otlp or None, "content": self.otlp_content}


def record(options: RecordOptions, report: Reporter, launched: Launched | None = None) -> int:
    """Run the agent behind the proxy, recording everything; return the exit status.

    ``launched`` is the launch entry.py already made for this command, if any.
    """
    if launched is None:
        launched = launch(
            options.agent_argv, report, str(options.db_path), options.label, check=options.check,
            otlp=options.otlp_settings(), max_wait=options.max_recorder_wait, sinks=options.sinks,
        )  # fmt: skip
    process, recording, forwarding = launched.process, launched.recording, launched.forwarding
    if process is None or recording is None or forwarding is None:
        failure = launched.failure
        assert failure is not None
        report(str(failure))
        _record_spawn_failure(options, str(failure), launched.clock_origin[1], report)
        return failure.exit_status
    inspector = _start_ui(options.db_path, report) if options.ui else None
    import gc

    from acp_proxy.record.relay import relay

    # Everything imported so far lives as long as the proxy: keep it out of the cyclic
    # collector's way, so that a full collection never pauses forwarding for milliseconds.
    gc.freeze()

    try:
        ended = relay(process, forwarding, report, grace=options.grace)
    finally:
        if process.returncode is None:  # the relay itself failed: do not leave the agent behind
            process.kill()
            process.wait()
    recording.finish(
        exit_code=ended.exit_code, exit_signal=ended.signal, deadline=options.flush_deadline
    )
    if inspector is not None and inspector.poll() is None:
        inspector.terminate()
    return ended.exit_status


def _start_ui(db_path: Path, report: Reporter) -> subprocess.Popen[bytes] | None:
    """``acp-proxy ui`` beside this recording (see the module rules)."""
    argv = [sys.executable, "-m", "acp_proxy", "ui", "--db", str(db_path), "--no-open"]
    argv += ["--watch-pid", str(os.getpid())]
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=True
        )
    except OSError as error:
        report(f"cannot start the ui: {error}")
        return None


def _record_spawn_failure(
    options: RecordOptions, error: str, started_ns: int, report: Reporter
) -> None:
    from acp_proxy.store.database import connect
    from acp_proxy.store.writer import NewConnection, RecordingWriter

    new = NewConnection(**connection_settings(options.agent_argv, started_ns, options.label))
    try:
        db = connect(options.db_path)
        try:
            writer = RecordingWriter.start(db, new)
            writer.update(
                status="spawn_failed", error=error, ended_ns=time.time_ns(), recorder_pid=None
            )
        finally:
            db.close()
    except RecordingError as failure:
        report(f"{failure}; the failed start was not recorded")
