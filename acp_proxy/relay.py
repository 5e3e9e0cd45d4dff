"""The I/O shell: spawns the agent, moves bytes between it and the client, passes signals on.

Rules:
- Each direction is one long loop in its own worker thread: blocking ``os.read`` of whatever
  is there (never waiting for a line or a full buffer), ``tap.put`` of the chunk, ``os.write``
  of the same bytes. The chunk is queued for the recorder before it is written on, so a reply
  can never be recorded before its cause; nothing looks inside it on this path.
- The loops wait in ``poll`` on their source and on a shared stop pipe, so the task group can
  end them when the agent is gone; no thread is ever left blocked on a read.
- anyio owns the structure: one task group holds the loops, the reaper and the signal task.
- Lifecycle: on client EOF, close the agent's stdin; if it has not exited after ``grace``
  seconds, SIGTERM its process group, then SIGKILL after ``grace`` more. When the agent has
  exited, its stdout and stderr are drained (a grandchild holding them gets ``drain`` seconds).
- SIGINT, SIGTERM and SIGHUP received by the proxy go to the agent's process group (the agent
  runs in a group of its own, so a terminal's Ctrl-C reaches it exactly once).
- The exit status is the agent's: its code, or 128+N when signal N ended it.
- The proxy's own words go to the ``report`` callback (stderr), never to stdout.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread

from .acp import Direction
from .tap import PipeTap

CHUNK_SIZE = 64 * 1024
PIPE_SIZE = 1024 * 1024
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux only; elsewhere the call fails

Reporter = Callable[[str], None]


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
    except FileNotFoundError as error:
        raise SpawnFailed(f"cannot run {argv[0]!r}: command not found", 127) from error
    except PermissionError as error:
        raise SpawnFailed(f"cannot run {argv[0]!r}: permission denied", 126) from error
    except OSError as error:
        raise SpawnFailed(f"cannot run {argv[0]!r}: {error.strerror or error}", 126) from error
    # Bigger pipes mean fewer reads and writes for large frames; the default (64 KiB) is kept
    # where the system refuses.
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(pipe.fileno(), _F_SETPIPE_SZ, PIPE_SIZE)
    return process


@dataclass(frozen=True, slots=True)
class AgentExit:
    """How the agent ended."""

    returncode: int

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


def _write_all(fd: int, chunk: bytes) -> None:
    view = memoryview(chunk)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def pump(
    source: int, destination: int, direction: Direction, tap: PipeTap, stop_fd: int,
    report: Reporter,
) -> None:  # fmt: skip
    """Forward ``source`` to ``destination`` chunk by chunk until EOF or stop; tap each chunk.

    ``tap.put`` comes first: it is cheap, and it only waits when the recorder is more than the
    tap's bound behind (the documented backpressure).

    A destination that goes away (EPIPE) stops the forwarding, not the reading: what the
    peer still says is recorded.
    """
    poller = select.poll()
    poller.register(source, select.POLLIN)
    poller.register(stop_fd, select.POLLIN)
    forwarding = True
    read, monotonic_ns, put = os.read, time.monotonic_ns, tap.put
    while True:
        ready = poller.poll()
        if any(fd == stop_fd for fd, _ in ready):
            break
        try:
            chunk = read(source, CHUNK_SIZE)
        except OSError:
            chunk = b""
        if not chunk:
            break
        # Queued before it is written on: once the peer can see these bytes, it can answer,
        # and the answer must never get an earlier place in the timeline than its cause.
        put(direction, monotonic_ns(), chunk)
        if forwarding:
            try:
                _write_all(destination, chunk)
            except OSError as error:
                forwarding = False
                if error.errno not in (errno.EPIPE, errno.EBADF):
                    report(f"cannot forward {direction.value}: {error.strerror or error}")
    put(direction, monotonic_ns(), b"")


async def relay(
    process: subprocess.Popen[bytes],
    tap: PipeTap,
    report: Reporter,
    *,
    grace: float = 5.0,
    drain: float = 2.0,
    client_in: int = 0,
    client_out: int = 1,
    client_err: int = 2,
) -> AgentExit:
    """Move bytes between the client's stdio and the agent until the agent has exited."""
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    stop_read, stop_write = os.pipe()
    agent_stdin = process.stdin
    exited = anyio.Event()
    outputs_done = anyio.Event()
    client_eof = anyio.Event()
    pending_outputs = 2

    async def forward_up() -> None:
        await anyio.to_thread.run_sync(
            pump, client_in, agent_stdin.fileno(), Direction.CLIENT_TO_AGENT, tap, stop_read,
            report,
        )  # fmt: skip
        with contextlib.suppress(OSError):
            agent_stdin.close()
        client_eof.set()

    async def forward_down(source: int, destination: int, direction: Direction) -> None:
        nonlocal pending_outputs
        await anyio.to_thread.run_sync(pump, source, destination, direction, tap, stop_read, report)
        pending_outputs -= 1
        if pending_outputs == 0:
            outputs_done.set()

    async def reap() -> None:
        await anyio.to_thread.run_sync(process.wait)
        exited.set()

    async def end_after_client_eof() -> None:
        await client_eof.wait()
        if exited.is_set():
            return
        with anyio.move_on_after(grace):
            await exited.wait()
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if exited.is_set():
                return
            report(f"the agent did not exit {grace:g}s after its stdin closed: sending "
                   f"{signal.Signals(signum).name}")  # fmt: skip
            _signal_group(process, signum)
            with anyio.move_on_after(grace):
                await exited.wait()

    async def pass_signals() -> None:
        with anyio.open_signal_receiver(*FORWARDED_SIGNALS) as received:
            async for signum in received:
                _signal_group(process, signum)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(pass_signals)
            group.start_soon(forward_up)
            group.start_soon(forward_down, process.stdout.fileno(), client_out,
                             Direction.AGENT_TO_CLIENT)  # fmt: skip
            group.start_soon(forward_down, process.stderr.fileno(), client_err,
                             Direction.AGENT_STDERR)  # fmt: skip
            group.start_soon(reap)
            group.start_soon(end_after_client_eof)
            await exited.wait()
            with anyio.move_on_after(drain):
                await outputs_done.wait()
            # The agent is gone: whatever still blocks (a client that keeps stdin open, a
            # grandchild holding the agent's stdout) is told to stop; the loops then return.
            os.write(stop_write, b"x")
            await outputs_done.wait()
            await client_eof.wait()
            group.cancel_scope.cancel()
    finally:
        os.close(stop_read)
        os.close(stop_write)
    returncode = process.returncode
    assert returncode is not None
    return AgentExit(returncode)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)
