"""Launching a proxied agent: spawn it, fork the recorder, start forwarding. Nothing slow.

Rules:
- ``launch`` does, in this order: spawn the agent (signals are passed on to it from then on),
  fork the recorder process (while the proxy has no threads and a small memory), tell it where
  and what to record, start the forwarding threads. Bytes flow from that moment.
- entry.py launches ``record``'s agent before the command line library is even imported.
- A spawn failure is kept (``failure``) to be reported by ``record``, which knows where the
  database is.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence

from acp_proxy import __version__
from acp_proxy.record.forward import Forwarding
from acp_proxy.record.recorder_process import RecorderProcess, start_recorder_process
from acp_proxy.record.spawn import SpawnFailed, pass_signals_to, spawn_agent
from acp_proxy.stderr import Reporter


class Launched:
    """An agent with its recorder and forwarding, as started by ``launch``."""

    __slots__ = ("argv", "clock_origin", "failure", "forwarding", "process", "recorder")

    def __init__(
        self,
        argv: Sequence[str],
        clock_origin: tuple[int, int],
        process: subprocess.Popen[bytes] | None = None,
        recorder: RecorderProcess | None = None,
        forwarding: Forwarding | None = None,
        failure: SpawnFailed | None = None,
    ) -> None:
        self.argv = list(argv)
        self.clock_origin = clock_origin
        self.process = process
        self.recorder = recorder
        self.forwarding = forwarding
        self.failure = failure


def launch(
    argv: Sequence[str],
    report: Reporter,
    db_path: str,
    label: str | None = None,
    *,
    check: bool = False,
    otlp: dict[str, object] | None = None,
) -> Launched:
    """Start everything that moves bytes, and tell the recorder where to record.

    ``otlp``: the recorder also exports spans live (``record --otlp``: endpoint, content).
    Never raises for the agent's sake: a spawn failure is kept in the result.
    """
    clock_origin = (time.monotonic_ns(), time.time_ns())
    try:
        process = spawn_agent(argv)
    except SpawnFailed as failure:
        return Launched(argv, clock_origin, failure=failure)
    pass_signals_to(process)
    pipes = (process.stdin, process.stdout, process.stderr)
    recorder = start_recorder_process(
        clock_origin, report, [pipe.fileno() for pipe in pipes if pipe is not None]
    )
    connection = {
        "argv": list(argv), "cwd": os.getcwd(), "proxy_version": __version__,
        "proxy_pid": os.getpid(), "label": label, "started_ns": clock_origin[1],
    }  # fmt: skip
    if otlp is not None:  # the trace id is the uid: the exporter must know it from the start
        connection["uid"] = os.urandom(16).hex()
    recorder.tap.configure(db=db_path, check=check, connection=connection, otlp=otlp)
    recorder.tap.update(agent_pid=process.pid)
    forwarding = Forwarding(process, recorder.tap, report)
    return Launched(argv, clock_origin, process, recorder, forwarding)
