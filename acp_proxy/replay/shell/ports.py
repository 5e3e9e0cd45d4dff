"""The two sides of replay's I/O shell: the client on descriptors 0 and 1, the agent process.

Rules:
- Each side is a few anyio tasks and what the loop (loop.py) reads of them: bytes still to
  write (``pending``), when it last took bytes (``progress``), whether it is gone. Input goes
  to the loop as ``Input`` events (the time it was read, the frames it completes cut by
  wire.LineSplitter, whether the input ended); a side that wrote, drained or failed pokes the
  loop. Neither side decides anything: the loop does.
- The client's descriptors are never changed (a terminal's flags are shared with the shell
  that runs us, and stdout's file description often with stderr): no ``O_NONBLOCK``. Reading
  waits for readiness (``anyio.wait_readable``), then one ``read`` takes what is there. Writing
  waits for room (``anyio.wait_writable``) and writes at most ``PIPE_BUF`` bytes at a time to a
  pipe, socket or terminal: the kernel takes that much whenever it reports room, so a client
  that stops reading never blocks the loop. Descriptors that cannot be polled (regular files,
  ``/dev/null``) are always ready and never block for long.
- The agent runs under ``anyio.open_process`` in a session and process group of its own (a
  terminal's Ctrl-C reaches it once, through us); ``signal`` goes to that whole group. Its
  stdout is cut into frames for the loop, its stderr passed on to ours as it comes; ``log``
  sees every chunk that crossed its pipes (written to its stdin, read from its stdout and
  stderr), with its monotonic time.
- Peer bytes never crash anything: a side whose descriptor fails is gone, not an error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.record.spawn import spawn_failure
from acp_proxy.replay.shell.common import (
    READ_SIZE,
    YIELD_AFTER,
    ClientSide,
    Event,
    Input,
    Log,
    Poke,
    Signalled,
    frames_of,
)

__all__ = ["AgentPort", "ClientPort", "Event", "Inbox", "Input", "Log", "Poke", "Signalled"]

if TYPE_CHECKING:  # only --record brings the tap in
    from acp_proxy.record.tap import Tap

AGENT_WRITE_SIZE = 65536  # the agent's stdin is an asyncio pipe: it buffers, then drains
Inbox = MemoryObjectSendStream[Event]


class _Doorbell:
    """Wakes one waiting task; rung before it waits, it does not wait."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def ring(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


class ClientPort(ClientSide):
    """The client: its frames from ``stdin_fd``, our bytes to it on ``stdout_fd``."""

    def __init__(self, stdin_fd: int, stdout_fd: int, tap: Tap | None, inbox: Inbox) -> None:
        super().__init__(stdin_fd, stdout_fd, tap)
        self._inbox = inbox
        self.reading = anyio.CancelScope()
        self._bell = _Doorbell()

    def send(self, data: bytes, now: int) -> None:
        """Queue bytes for the client."""
        super().send(data, now)
        self._bell.ring()

    async def read(self) -> None:
        """Read the client's stdin until it ends (or the loop stops reading it)."""
        splitter, pollable = LineSplitter(), True
        with self.reading:
            while True:
                if pollable:
                    try:
                        await anyio.wait_readable(self.stdin_fd)
                    except OSError:  # a regular file or /dev/null: always ready
                        pollable = False
                else:
                    await anyio.lowlevel.checkpoint()
                try:
                    chunk = os.read(self.stdin_fd, READ_SIZE)
                except BlockingIOError:  # someone else's O_NONBLOCK, or a spurious wake-up
                    continue
                except OSError:  # a hung-up terminal, a closed descriptor: the input ended
                    chunk = b""
                event = self.input_of(splitter, chunk)
                await self._inbox.send(event)
                if event.ended:
                    return

    async def write(self) -> None:
        """Write what is queued, as the client takes it, until it is gone."""
        pollable, unyielded = True, 0
        while True:
            while not self.pending:
                unyielded = 0
                await self._bell.wait()
            if pollable and not self._writable.poll(0):
                unyielded = 0
                try:
                    await anyio.wait_writable(self.stdout_fd)
                except OSError:  # cannot be polled: never blocks for long
                    pollable = False
            elif unyielded >= YIELD_AFTER:  # a client that keeps up: let the other tasks run
                unyielded = 0
                await anyio.lowlevel.checkpoint()
            try:
                written = os.write(self.stdout_fd, self.pending[: self._slice])
            except BlockingIOError:
                written = 0
            except OSError:  # EPIPE: the client closed its end
                self.gone = True
                self.pending.clear()
                self._inbox.send_nowait(Poke())
                return
            if written:
                del self.pending[:written]
                self.progress = time.monotonic_ns()
                unyielded += written
                if not self.pending:
                    self._inbox.send_nowait(Poke())


class AgentPort:
    """The agent process: its frames from its stdout, our bytes to its stdin."""

    def __init__(self, process: anyio.abc.Process, log: Log | None, inbox: Inbox) -> None:
        self.process, self.log, self._inbox = process, log, inbox
        self.pending = bytearray()
        self.progress = time.monotonic_ns()
        self.closed_at: int | None = None  # when its stdin was closed as the loop asked
        self.broken = False  # its stdin broke (EPIPE): it no longer reads
        self.listening = True  # its frames go to the loop (not once the run is over)
        self._close = False
        self._bell = _Doorbell()
        self.scope = anyio.CancelScope()  # its tasks (see ``serve``)

    @classmethod
    async def start(cls, argv: Sequence[str], log: Log | None, inbox: Inbox) -> AgentPort:
        """Start ``argv``; raises record.spawn.SpawnFailed if it cannot run."""
        try:
            process = await anyio.open_process(list(argv), start_new_session=True)
        except OSError as error:
            raise spawn_failure(argv, error) from error
        return cls(process, log, inbox)

    def send(self, data: bytes, now: int) -> None:
        if self.broken or self._close:
            return  # it no longer reads: its output ending says the rest
        if not self.pending:
            self.progress = now
        self.pending += data
        self._bell.ring()

    def close_stdin(self) -> None:
        """Close the agent's stdin once what is queued is written."""
        self._close = True
        self._bell.ring()

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the agent's process group (nothing if it is gone)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    async def serve(self) -> None:
        """Its tasks: writing its stdin, reading its stdout and stderr (until ``scope`` ends)."""
        with self.scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._write)
                tasks.start_soon(self._read_stdout)
                tasks.start_soon(self._read_stderr)

    async def _write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        while True:
            while not self.pending and not self._close:
                await self._bell.wait()
            if not self.pending:
                break
            piece = bytes(self.pending[:AGENT_WRITE_SIZE])
            try:
                await stdin.send(piece)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self.broken = True
                break
            now = time.monotonic_ns()
            if self.log is not None:
                self.log(Direction.CLIENT_TO_AGENT, now, piece)
            del self.pending[: len(piece)]
            self.progress = now
        with contextlib.suppress(anyio.BrokenResourceError, OSError):
            await stdin.aclose()
        if not self.broken:
            self.closed_at = time.monotonic_ns()
        self.pending.clear()
        self._inbox.send_nowait(Poke())

    async def _read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        splitter = LineSplitter()
        while True:
            chunk = await _receive(stdout)
            now = time.monotonic_ns()
            if chunk and self.log is not None:
                self.log(Direction.AGENT_TO_CLIENT, now, chunk)
            frames, ended = frames_of(splitter, chunk)
            if self.listening:
                await self._inbox.send(Input("agent", now, frames, ended))
            if ended:
                return

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await _receive(stderr):
            if self.log is not None:
                self.log(Direction.AGENT_STDERR, time.monotonic_ns(), chunk)
            with contextlib.suppress(OSError):
                os.write(2, chunk)

    async def end(self, grace_s: float, signalled_at: float | None) -> int:
        """Close our ends and have the agent exit; returns its ``returncode``.

        After a signal (passed on when it came), the agent has until ``signalled_at`` plus the
        grace, then SIGKILL. Otherwise its stdin is closed and it gets the grace, then SIGTERM
        and the grace again, then SIGKILL.
        """
        self.listening = False
        self.close_stdin()
        process = self.process
        steps = [signal.SIGKILL]
        if signalled_at is None:
            steps.insert(0, signal.SIGTERM)
            deadline = anyio.current_time() + grace_s
        else:
            deadline = signalled_at + grace_s
        for signum in steps:
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                await process.wait()
            if process.returncode is not None:
                break
            self.signal(signum)
            deadline = anyio.current_time() + grace_s
        returncode = await process.wait()
        self.scope.cancel()
        with anyio.move_on_after(grace_s):
            await process.aclose()
        return returncode


async def _receive(stream: anyio.abc.ByteReceiveStream) -> bytes:
    """The next chunk, or b"" once the stream ended (or broke)."""
    try:
        return await stream.receive(READ_SIZE)
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return b""
