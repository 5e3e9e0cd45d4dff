"""The replay's I/O shell: client stdin in, protocol bytes out on stdout, clocks and signals.

Rules:
- One thread, one ``poll`` loop: it reads stdin chunk by chunk as it comes (wire.LineSplitter
  cuts frames), hands frames to the sans-I/O engine (replay.py), writes what the engine
  returns, and sleeps until input comes or the engine's ``wake_at``. Reading and writing are
  both driven by ``poll`` (stdout non-blocking), so a client that writes while we write can
  never deadlock us, and a client that stops reading is given up after the timeout.
- stdout carries nothing but protocol bytes; the proxy's own words go to stderr (stderr.py).
- SIGINT, SIGTERM and SIGHUP end the replay (a client ends its agent that way); they arrive
  through a wakeup pipe polled with the rest, so the engine is never interrupted mid-step. A
  client that closes its end of stdout ends it too. Never hangs: every wait has a deadline.
- With a tap (``--record``), every chunk read is put on it before it is fed to the engine and
  every chunk written before it is written, as ``record`` does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from types import FrameType

from .acp import Direction
from .replay import Replay
from .tap import Tap
from .wire import LineSplitter

READ_SIZE = 65536
_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GONE = select.POLLERR | select.POLLHUP | select.POLLNVAL


def serve(
    replay: Replay,
    timeout_ns: int,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    tap: Tap | None = None,
    clock: Callable[[], int] = time.monotonic_ns,
) -> None:
    """Run ``replay`` against the client on ``stdin_fd`` / ``stdout_fd`` until it is over."""
    with signal_pipe() as signals, non_blocking(stdout_fd):
        _loop(replay, timeout_ns, (stdin_fd, stdout_fd, signals), tap, clock)


def _loop(
    replay: Replay,
    timeout_ns: int,
    fds: tuple[int, int, int],
    tap: Tap | None,
    clock: Callable[[], int],
) -> None:
    stdin_fd, stdout_fd, signals = fds
    splitter = LineSplitter()
    reading = True
    pending = memoryview(b"")
    progress = clock()  # when stdout last accepted bytes (or had nothing to take)
    poller = select.poll()
    poller.register(stdin_fd, select.POLLIN)
    poller.register(signals, select.POLLIN)
    while True:
        now = clock()
        step = replay.advance(now)
        if step.out:
            if tap is not None:
                tap.put(Direction.AGENT_TO_CLIENT, now, step.out)
            pending = memoryview(bytes(pending) + step.out) if pending else memoryview(step.out)
        if pending:
            try:
                written = os.write(stdout_fd, pending)
            except BlockingIOError:
                written = 0
            except OSError:  # EPIPE: the client is gone
                replay.stop("the client closed its end of the connection")
                return
            if written:
                pending, progress = pending[written:], now
        else:
            progress = now
        if step.done and not pending:
            return
        if pending and now - progress > timeout_ns:
            replay.stop(f"the client read nothing for {timeout_ns / 1e9:g}s")
            return
        if reading and step.done:
            poller.unregister(stdin_fd)
            reading = False
        wake = step.wake_at if step.wake_at is not None else now + 10**9
        if pending:
            wake = min(wake, progress + timeout_ns + 1)
            poller.register(stdout_fd, select.POLLOUT)
        wait_ms = max(0, -(-(wake - now) // 1_000_000))
        events = poller.poll(wait_ms)
        if pending:
            poller.unregister(stdout_fd)
        for fd, event in events:
            if fd == signals:
                signum = os.read(signals, 64)[-1]
                replay.stop(f"ended by {signal.Signals(signum).name}")
            elif fd == stdout_fd and event & GONE and not event & select.POLLOUT:
                replay.stop("the client closed its end of the connection")
                return
            elif fd == stdin_fd and reading:
                chunk = os.read(stdin_fd, READ_SIZE)
                now = clock()
                if tap is not None:
                    tap.put(Direction.CLIENT_TO_AGENT, now, chunk)
                if chunk:
                    for frame in splitter.feed(chunk):
                        replay.receive(bytes(frame.raw), now)
                    continue
                tail = splitter.finish()
                if tail is not None:
                    replay.receive(bytes(tail.raw), now)
                replay.client_closed(now)
                poller.unregister(stdin_fd)
                reading = False


@contextlib.contextmanager
def signal_pipe() -> Iterator[int]:
    """A pipe that receives the number of each stopping signal (``signal.set_wakeup_fd``)."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous = {signum: signal.signal(signum, _ignore) for signum in _STOPPING}
    old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        yield read_fd
    finally:
        signal.set_wakeup_fd(old_wakeup)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.close(read_fd)
        os.close(write_fd)


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler: the wakeup pipe does the work."""


@contextlib.contextmanager
def non_blocking(fd: int) -> Iterator[None]:
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)
