"""Launching a proxied agent: spawn it, fork the recorder, start forwarding. Nothing slow.

Rules:
- ``launch`` does, in this order: spawn the agent (signals are passed on to it from then on),
  start the recording (recording.py: the recorder process is forked while the proxy has no
  threads and a small memory, and told where and what to record), start the forwarding
  threads. Bytes flow from that moment.
- entry.py launches ``record``'s agent before the command line library is even imported,
  and this module spawns it before it loads the recording and forwarding code, so that the
  agent's own start-up runs while the proxy loads them.
- A spawn failure is kept (``failure``) to be reported by ``record``, which knows where the
  database is.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp_proxy.record.spawn import SpawnFailed, pass_signals_to, spawn_agent
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.forward import Forwarding
    from acp_proxy.record.recorder import SinkFactory
    from acp_proxy.record.recording import Recording


class Launched:
    """An agent with its recorder and forwarding, as started by ``launch``."""

    __slots__ = ("argv", "clock_origin", "failure", "forwarding", "process", "recording")

    def __init__(
        self,
        argv: Sequence[str],
        clock_origin: tuple[int, int],
        process: subprocess.Popen[bytes] | None = None,
        recording: Recording | None = None,
        forwarding: Forwarding | None = None,
        failure: SpawnFailed | None = None,
    ) -> None:
        self.argv = list(argv)
        self.clock_origin = clock_origin
        self.process = process
        self.recording = recording
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
    max_wait: float | None = None,
    sinks: SinkFactory | None = None,
) -> Launched:
    """Start everything that moves bytes, and tell the recorder where to record.

    ``otlp``: the recorder also exports spans live (``record --otlp``: endpoint, content),
    through the sink ``sinks`` makes (the command line's list, cli/sinks.py).
    Never raises for the agent's sake: a spawn failure is kept in the result.
    """
    clock_origin = (time.monotonic_ns(), time.time_ns())
    try:
        process = spawn_agent(argv)
    except SpawnFailed as failure:
        return Launched(argv, clock_origin, failure=failure)
    pass_signals_to(process)
    # Loaded once the agent is starting: it starts while the proxy reads these.
    from acp_proxy.record.forward import Forwarding
    from acp_proxy.record.recording import Recording, client_command

    pipes = (process.stdin, process.stdout, process.stderr)
    recording = Recording.start(
        db_path, argv, report, label=label, check=check, clock_origin=clock_origin,
        conversation_fds=[pipe.fileno() for pipe in pipes if pipe is not None],
        max_wait=max_wait, otlp=otlp, client_argv=client_command(), sinks=sinks,
    )  # fmt: skip
    recording.update(agent_pid=process.pid)
    forwarding = Forwarding(process, recording.tap, report)
    return Launched(argv, clock_origin, process, recording, forwarding)
