"""Starting the agent, and how it ended.

Rules:
- The agent gets the caller's environment and working folder, its stdio on pipes, and a process
  group of its own (so a terminal's Ctrl-C reaches it once, through the proxy).
- SIGINT, SIGTERM and SIGHUP received by the proxy are passed on to the agent's process group
  from the moment the agent exists (``pass_signals_to``), before anything else is set up: a
  signal that arrives during start-up must not kill the proxy and orphan the agent.
- A command that cannot start raises ``SpawnFailed`` with the exit status a shell would give:
  127 when it is not found, 126 when it cannot be executed.
- Imports stay light: this runs before anything else in ``record``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
from collections.abc import Sequence
from types import FrameType

from acp_proxy.record import defaults

DEFAULT_GRACE = defaults.DEFAULT_GRACE  # the same number, for those who look for it here

PIPE_SIZE = 1024 * 1024
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux only; elsewhere the call fails


class SpawnFailed(Exception):
    """The agent command could not be started; ``exit_status`` is what a shell would return."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


def spawn_agent(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start the agent with the caller's environment and cwd, its stdio on pipes."""
    try:
        process = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            bufsize=0, process_group=0,
        )  # fmt: skip
    except OSError as error:
        raise spawn_failure(argv, error) from error
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            enlarge_pipe(pipe.fileno())
    return process


def spawn_failure(argv: Sequence[str], error: OSError) -> SpawnFailed:
    """Why ``argv`` could not start, with the exit status a shell would give."""
    if isinstance(error, FileNotFoundError):
        return SpawnFailed(f"cannot run {argv[0]!r}: command not found", 127)
    if isinstance(error, PermissionError):
        return SpawnFailed(f"cannot run {argv[0]!r}: permission denied", 126)
    return SpawnFailed(f"cannot run {argv[0]!r}: {error.strerror or error}", 126)


def enlarge_pipe(fd: int) -> None:
    """Give a pipe a 1 MiB buffer: fewer reads and writes for large frames, room for bursts.

    Where the system refuses (not Linux, or a lower limit), the default (64 KiB) is kept.
    """
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_SIZE)


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` to the agent's process group (nothing if it is already gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def pass_signals_to(process: subprocess.Popen[bytes]) -> None:
    """From now on, SIGINT, SIGTERM and SIGHUP sent to the proxy go to the agent instead."""

    def pass_on(signum: int, _frame: FrameType | None) -> None:
        signal_group(process, signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, pass_on)


class AgentExit:
    """How the agent ended (a plain class: ``dataclasses`` is too slow to import here)."""

    __slots__ = ("returncode",)

    def __init__(self, returncode: int) -> None:
        self.returncode = returncode

    @property
    def exit_code(self) -> int | None:
        return self.returncode if self.returncode >= 0 else None

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None

    @property
    def exit_status(self) -> int:
        """What the proxy exits with: the code, or 128+N for signal N, as a shell reports it."""
        return self.returncode if self.returncode >= 0 else 128 - self.returncode
