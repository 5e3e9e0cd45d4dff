"""The I/O shell of ``replay --to-agent``: the agent as a subprocess, driven by drive.py.

Rules:
- The agent is started with spawn.py (pipes, its own process group). One thread, one ``poll``
  loop over the agent's stdin (non-blocking, written as it accepts), stdout (cut into lines by
  wire.LineSplitter and handed to the engine) and stderr (passed on to our stderr as it comes).
- Every wait has a deadline: ``timeout_ns`` without any frame from the agent while one is
  expected is a divergence; so is an agent that stops reading its stdin for that long.
- Once the engine is done without a divergence, the agent's stdin is closed and its output is
  read until it ends or ``grace_ns`` passes: a frame it sends then is one the recording does
  not have. The agent is then ended (SIGTERM to its group, SIGKILL after the grace).
- With a tap (``--record``), what is written to the agent is put on it as ``c2a``, what it
  writes as ``a2c`` and its stderr as ``stderr``, as ``record`` does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.record.spawn import signal_group, spawn_agent
from acp_proxy.record.tap import Tap
from acp_proxy.replay.drive import Drive

READ_SIZE = 65536


def run(
    drive: Drive, argv: Sequence[str], timeout_ns: int, grace_ns: int, tap: Tap | None = None
) -> int:
    """Drive the agent started from ``argv``; returns how it ended (its ``returncode``)."""
    process = spawn_agent(argv)
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        _loop(drive, process, timeout_ns, grace_ns, tap)
    finally:
        returncode = end_agent(process, grace_ns / 1e9)
    return returncode


def _loop(
    drive: Drive, process: subprocess.Popen[bytes], timeout_ns: int, grace_ns: int,
    tap: Tap | None,
) -> None:  # fmt: skip
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin.fileno(), process.stdout.fileno(), process.stderr.fileno()
    flags = fcntl.fcntl(stdin, fcntl.F_GETFL)
    fcntl.fcntl(stdin, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    splitter = LineSplitter()
    pending = b""
    open_fds = {stdout, stderr}
    progress = time.monotonic_ns()
    closing_at: int | None = None  # when stdin was closed after the engine was done
    while stdout in open_fds:
        now = time.monotonic_ns()
        pending += drive.outgoing()
        if pending and not process.stdin.closed:
            try:
                written = os.write(stdin, pending)
            except BlockingIOError:
                written = 0
            except OSError:  # EPIPE: the agent no longer reads
                written, pending = 0, b""
                process.stdin.close()
            if written:
                if tap is not None:
                    tap.put(Direction.CLIENT_TO_AGENT, now, pending[:written])
                pending, progress = pending[written:], now
        if drive.divergence is not None:
            return
        if drive.done and not pending and closing_at is None:
            process.stdin.close()
            closing_at = now
        deadline = progress + timeout_ns if closing_at is None else closing_at + grace_ns
        if now >= deadline:
            if closing_at is None:
                drive.timed_out(timeout_ns / 1e9)
            return
        poller = select.poll()
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        if pending and not process.stdin.closed:
            poller.register(stdin, select.POLLOUT)
        for fd, _event in poller.poll(max(1, -(-(deadline - now) // 1_000_000))):
            if fd == stdin:
                continue
            chunk = os.read(fd, READ_SIZE)
            now = time.monotonic_ns()
            if fd == stderr:
                _pass_stderr(chunk, now, tap)
                if not chunk:
                    open_fds.discard(stderr)
                continue
            if tap is not None and chunk:
                tap.put(Direction.AGENT_TO_CLIENT, now, chunk)
            frames = list(splitter.feed(chunk)) if chunk else []
            if not chunk:
                open_fds.discard(stdout)
                tail = splitter.finish()
                frames += [tail] if tail is not None else []
            for frame in frames:
                progress = now
                drive.receive(bytes(frame.raw))
            if not chunk:
                drive.agent_closed()


def _pass_stderr(chunk: bytes, now: int, tap: Tap | None) -> None:
    if not chunk:
        return
    if tap is not None:
        tap.put(Direction.AGENT_STDERR, now, chunk)
    with contextlib.suppress(OSError):
        os.write(2, chunk)


def end_agent(process: subprocess.Popen[bytes], grace: float) -> int:
    """Close our ends, give the agent ``grace`` seconds, then SIGTERM, then SIGKILL."""
    if process.stdin is not None and not process.stdin.closed:
        with contextlib.suppress(OSError):
            process.stdin.close()
    for signum in (None, signal.SIGTERM, signal.SIGKILL):
        if signum is not None:
            signal_group(process, signum)
        try:
            returncode = process.wait(grace)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        returncode = process.wait()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    return returncode
