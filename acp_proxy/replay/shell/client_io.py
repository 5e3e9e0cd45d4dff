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

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.record.tap import Tap
from acp_proxy.replay.engine import Replay

READ_SIZE = 65536
_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GONE = select.POLLERR | select.POLLHUP | select.POLLNVAL


class ClientSide:
    """The client's end of a replay shell (this module's loop and replay_live_io.py's).

    Its stdin cut into frames, our non-blocking stdout and what still waits to go out there,
    and with a tap, every chunk put on it as ``record`` does: read chunks when read, written
    ones before they are written.
    """

    def __init__(
        self, stdin_fd: int, stdout_fd: int, tap: Tap | None, clock: Callable[[], int]
    ) -> None:
        self.stdin_fd, self.stdout_fd, self.tap, self.clock = stdin_fd, stdout_fd, tap, clock
        self.pending = memoryview(b"")  # what stdout has not taken yet
        self.progress = clock()  # when stdout last accepted bytes (or had nothing to take)
        self.reading = True  # until stdin ends
        self._splitter = LineSplitter()

    def send(self, out: bytes, now: int) -> None:
        """Queue bytes for the client's stdin (our stdout)."""
        if self.tap is not None:
            self.tap.put(Direction.AGENT_TO_CLIENT, now, out)
        self.pending = memoryview(bytes(self.pending) + out) if self.pending else memoryview(out)

    def flush(self, now: int) -> bool:
        """Write what our stdout takes now, without waiting; False once the client is gone."""
        if not self.pending:
            self.progress = now
            return True
        try:
            written = os.write(self.stdout_fd, self.pending)
        except BlockingIOError:
            written = 0
        except OSError:  # EPIPE: the client is gone
            return False
        if written:
            self.pending, self.progress = self.pending[written:], now
        return True

    def stalled(self, now: int, timeout_ns: int) -> bool:
        """Whether the client has read nothing of what waits for longer than ``timeout_ns``."""
        return bool(self.pending) and now - self.progress > timeout_ns

    def read(self) -> tuple[int, list[bytes], bool]:
        """Read what stdin holds: when it was read, the frames it completes, and whether stdin
        has ended (then the last line without a newline, if any, is among the frames)."""
        chunk = os.read(self.stdin_fd, READ_SIZE)
        now = self.clock()
        if self.tap is not None:
            self.tap.put(Direction.CLIENT_TO_AGENT, now, chunk)
        if chunk:
            return now, [bytes(frame.raw) for frame in self._splitter.feed(chunk)], False
        self.reading = False
        tail = self._splitter.finish()
        return now, ([] if tail is None else [bytes(tail.raw)]), True


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
    client = ClientSide(stdin_fd, stdout_fd, tap, clock)
    poller = select.poll()
    poller.register(stdin_fd, select.POLLIN)
    poller.register(signals, select.POLLIN)
    while True:
        now = clock()
        step = replay.advance(now)
        if step.out:
            client.send(step.out, now)
        if not client.flush(now):
            replay.stop("the client closed its end of the connection")
            return
        if step.done and not client.pending:
            return
        if client.stalled(now, timeout_ns):
            replay.stop(f"the client read nothing for {timeout_ns / 1e9:g}s")
            return
        if client.reading and step.done:
            poller.unregister(stdin_fd)
            client.reading = False
        wake = step.wake_at if step.wake_at is not None else now + 10**9
        pending = bool(client.pending)
        if pending:
            wake = min(wake, client.progress + timeout_ns + 1)
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
            elif fd == stdin_fd and client.reading:
                now, frames, ended = client.read()
                for raw in frames:
                    replay.receive(raw, now)
                if ended:
                    replay.client_closed(now)
                    poller.unregister(stdin_fd)


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
