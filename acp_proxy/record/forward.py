"""Forwarding: one thread per direction moving bytes as they arrive, tapping each chunk.

Rules:
- Each direction is one loop in its own thread: a non-blocking ``readv`` of whatever is there
  into one reusable buffer (never waiting for a line or a full buffer; ``poll`` on the source
  and a stop pipe only when it is empty), ``tap.put_view`` of the chunk into the shared-memory
  ring, ``os.write`` of the same bytes. Nothing looks inside the bytes on this path.
- The chunk is queued for the recorder before it is written on: once the peer can see the
  bytes it can answer, and the answer must never get an earlier place in the timeline.
- A destination that goes away (EPIPE) stops the forwarding, not the reading: what the peer
  still says is recorded.
- Told to stop, a loop still passes on every byte its source held at that moment (the kernel
  says how many), then returns: an agent's last words written just before it exited are
  never cut off, however late the thread gets to run, and a grandchild that keeps writing
  cannot keep the loop going.
- The threads start as soon as the agent is spawned, before the rest of ``record`` is even
  imported; the relay then owns them: it waits for every one of them and ends them through
  the stop pipe. No thread is ever left blocked.
- When the client's stdin ends, the agent's stdin is closed.
"""

from __future__ import annotations

import array
import contextlib
import errno
import fcntl
import os
import select
import stat
import subprocess
import termios
import threading
import time

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.tap import Tap
from acp_proxy.stderr import Reporter

CHUNK_SIZE = 1024 * 1024  # as large as the pipes the agent writes into


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:  # somebody made our destination non-blocking: wait for room
            select.select([], [fd], [])


def _held_now(fd: int) -> int:
    """How many bytes ``fd`` holds unread right now (0 where the kernel cannot say)."""
    count = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, count)
    except OSError:
        return 0
    return max(0, count[0])


def _told_to_stop(ready: list[tuple[int, int]], stop_fd: int) -> bool:
    return any(fd == stop_fd for fd, _ in ready)


def pump(
    source: int, destination: int, direction: Direction, tap: Tap, stop_fd: int,
    report: Reporter,
) -> None:  # fmt: skip
    """Forward ``source`` to ``destination`` chunk by chunk until EOF or stop; tap each chunk.

    The source is read without blocking while it has data (one system call per chunk), and
    waited for with ``poll`` (with the stop pipe) only when it is empty. Reads go into one
    reusable buffer (no allocation per chunk; large reads would otherwise pay for fresh pages
    every time); the tap copies the bytes into its ring.
    """
    poller = select.poll()
    poller.register(source, select.POLLIN)
    poller.register(stop_fd, select.POLLIN)
    forwarding = True
    buffer = bytearray(CHUNK_SIZE)
    whole = memoryview(buffer)
    readv, monotonic_ns, put = os.readv, time.monotonic_ns, tap.put_view
    # Non-blocking only on pipes and sockets: a terminal's flags are shared with the shell,
    # which must never find them changed (even if the proxy is killed before restoring them).
    kind = os.fstat(source).st_mode
    nonblocking = os.get_blocking(source) and (stat.S_ISFIFO(kind) or stat.S_ISSOCK(kind))
    if nonblocking:
        os.set_blocking(source, False)
    target: bytearray | memoryview = buffer
    left = -1  # once told to stop: the bytes the source held then, still to pass on
    try:
        while True:
            if left < 0 and not nonblocking:  # a blocking source: wait for it (or stop) first
                ready = poller.poll()
                if _told_to_stop(ready, stop_fd):
                    left = _held_now(source)
            if left == 0:
                break
            if left > 0:  # never read past what was there when told to stop
                target = whole[: min(left, CHUNK_SIZE)]
            try:
                size = readv(source, (target,))
            except BlockingIOError:
                if left >= 0:
                    break
                ready = poller.poll()
                if _told_to_stop(ready, stop_fd):
                    left = _held_now(source)
                continue
            except OSError:
                size = 0
            if not size:
                break
            if left > 0:
                left -= size
            chunk = whole[:size]
            put(direction, monotonic_ns(), chunk)
            if forwarding:
                try:
                    _write_all(destination, chunk)
                except OSError as error:
                    forwarding = False
                    if error.errno not in (errno.EPIPE, errno.EBADF):
                        report(f"cannot forward {direction.value}: {error.strerror or error}")
    finally:
        if nonblocking:
            with contextlib.suppress(OSError):
                os.set_blocking(source, True)
    whole.release()
    put(direction, monotonic_ns(), memoryview(b""))


class Forwarding:
    """The three forwarding threads of one connection, started at once."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        tap: Tap,
        report: Reporter,
        *,
        client_in: int = 0,
        client_out: int = 1,
        client_err: int = 2,
    ) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self._stop_read, self._stop_write = os.pipe()
        self._agent_stdin = process.stdin
        self.client_eof = threading.Event()
        up = (client_in, process.stdin.fileno(), Direction.CLIENT_TO_AGENT)
        down = (process.stdout.fileno(), client_out, Direction.AGENT_TO_CLIENT)
        err = (process.stderr.fileno(), client_err, Direction.AGENT_STDERR)
        self._up = threading.Thread(target=self._forward_up, args=(*up, tap, report),
                                    name="acp-proxy c2a")  # fmt: skip
        self._outputs = [
            threading.Thread(
                target=pump,
                args=(*args, tap, self._stop_read, report),
                name=f"acp-proxy {args[2].value}",
            )
            for args in (down, err)
        ]
        for thread in (self._up, *self._outputs):
            thread.start()

    def _forward_up(
        self, source: int, destination: int, direction: Direction, tap: Tap, report: Reporter
    ) -> None:
        try:
            pump(source, destination, direction, tap, self._stop_read, report)
        finally:
            with contextlib.suppress(OSError):
                self._agent_stdin.close()
            self.client_eof.set()

    def wait_for_outputs(self, timeout: float | None = None) -> bool:
        """Wait until the agent's stdout and stderr have ended; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._outputs:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._outputs)

    def stop(self) -> None:
        """End every loop that is still running (they return promptly), then wait for them."""
        with contextlib.suppress(OSError):
            os.write(self._stop_write, b"x")
        for thread in (self._up, *self._outputs):
            thread.join()
        os.close(self._stop_read)
        os.close(self._stop_write)
