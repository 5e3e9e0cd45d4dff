"""The I/O shell of a replay that follows episodes and may go live (replay_episodes.py).

Rules:
- The client's side is served as replay_io.py serves it (``replay_io.ClientSide``: reading,
  writing, the tap): one thread, one ``poll`` loop over the client's stdin, our non-blocking
  stdout and a signal wakeup pipe; stdout carries nothing but protocol bytes; SIGINT, SIGTERM
  and SIGHUP end the run; a client that stops reading is given up after the timeout.
- When the engine goes live, the real agent is started (spawn.py: pipes, its own process
  group) and joins the same loop: its stdin non-blocking and written as it accepts, its stdout
  cut into frames for the engine, its stderr passed on to ours. A command that cannot start
  fails the catch-up.
- What crosses the agent's pipes (written to its stdin, read from its stdout and stderr) is
  kept with its monotonic time in ``Shell.chunks``: that is the new episode, which the caller
  records. Test conversations are small, so it is kept in memory.
- The agent's stdin is closed when the engine says so (the client closed, everything relayed);
  its output then has ``grace_ns`` to end. However the loop ends, the agent is ended as
  drive_io.py ends it (SIGTERM to its group, then SIGKILL).
- With a tap (``--record``), the client's side is put on it as replay_io.py does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.record.spawn import SpawnFailed, spawn_agent
from acp_proxy.record.tap import Tap
from acp_proxy.replay.episodes import Episodes
from acp_proxy.replay.shell.client_io import GONE, READ_SIZE, ClientSide, non_blocking, signal_pipe
from acp_proxy.replay.shell.drive_io import end_agent

Chunk = tuple[Direction, int, bytes]


class Shell:
    """One run: the client on ``stdin_fd``/``stdout_fd``, the agent once the engine wants it."""

    def __init__(
        self, engine: Episodes, timeout_ns: int, agent_argv: Sequence[str] | None,
        grace_ns: int, *, tap: Tap | None = None, stdin_fd: int = 0, stdout_fd: int = 1,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:  # fmt: skip
        self.engine, self.timeout_ns, self.grace_ns = engine, timeout_ns, grace_ns
        self.agent_argv = agent_argv
        self.tap, self.clock = tap, clock
        self.stdin_fd, self.stdout_fd = stdin_fd, stdout_fd
        self.chunks: list[Chunk] = []
        self.agent: subprocess.Popen[bytes] | None = None
        self.agent_status: int | None = None
        self._agent_out = b""
        self._agent_fds: set[int] = set()
        self._splitter = LineSplitter()
        self._closing_at: int | None = None
        self._no_agent = False

    def run(self) -> None:
        try:
            with signal_pipe() as signals, non_blocking(self.stdout_fd):
                self._loop(signals)
        finally:
            if self.agent is not None:
                self.agent_status = end_agent(self.agent, self.grace_ns / 1e9)

    def _loop(self, signals: int) -> None:
        engine, clock = self.engine, self.clock
        client = ClientSide(self.stdin_fd, self.stdout_fd, self.tap, clock)
        while True:
            now = clock()
            step = engine.advance(now)
            if step.out:
                client.send(step.out, now)
            self._feed_agent(now)
            if not client.flush(now):
                engine.stop("the client closed its end of the connection")
                return
            if step.done and not client.pending:
                return
            if client.stalled(now, self.timeout_ns):
                engine.stop(f"the client read nothing for {self.timeout_ns / 1e9:g}s")
                return
            if self._closing_at is not None and now - self._closing_at > self.grace_ns:
                engine.stop("the agent's output did not end after its stdin closed")
                continue
            wake = step.wake_at if step.wake_at is not None else now + 10**9
            if client.pending:
                wake = min(wake, client.progress + self.timeout_ns + 1)
            if self._closing_at is not None:
                wake = min(wake, self._closing_at + self.grace_ns + 1)
            poller = select.poll()
            poller.register(signals, select.POLLIN)
            if client.reading and not step.done:
                poller.register(self.stdin_fd, select.POLLIN)
            if client.pending:
                poller.register(self.stdout_fd, select.POLLOUT)
            for fd in self._agent_fds:
                poller.register(fd, select.POLLIN)
            stdin = self.agent.stdin if self.agent is not None else None
            if self._agent_out and stdin is not None and not stdin.closed:
                poller.register(stdin.fileno(), select.POLLOUT)
            for fd, event in poller.poll(max(0, -(-(wake - now) // 1_000_000))):
                now = clock()
                if fd == signals:
                    signum = os.read(signals, 64)[-1]
                    engine.stop(f"ended by {signal.Signals(signum).name}")
                elif fd == self.stdout_fd and event & GONE and not event & select.POLLOUT:
                    engine.stop("the client closed its end of the connection")
                    return
                elif fd == self.stdin_fd and client.reading:
                    now, frames, ended = client.read()
                    for raw in frames:
                        engine.receive(raw, now)
                    if ended:
                        engine.client_closed(now)
                elif fd in self._agent_fds:
                    self._read_agent(fd, now)

    # --- the agent ------------------------------------------------------------------------

    def _feed_agent(self, now: int) -> None:
        engine = self.engine
        if not engine.wants_agent or self._no_agent:
            return
        if self.agent is None and not self._start_agent():
            self._no_agent = True  # said once; the engine ends the run
            return
        assert self.agent is not None
        assert self.agent.stdin is not None
        stdin = self.agent.stdin
        self._agent_out += engine.to_agent()
        if stdin.closed:  # it stopped reading: what is left has nowhere to go
            self._agent_out = b""
        if self._agent_out and not stdin.closed:
            try:
                written = os.write(stdin.fileno(), self._agent_out)
            except BlockingIOError:
                written = 0
            except OSError:  # EPIPE: the agent no longer reads; its output ending says the rest
                written, self._agent_out = 0, b""
                stdin.close()
            if written:
                self.chunks.append((Direction.CLIENT_TO_AGENT, now, self._agent_out[:written]))
                self._agent_out = self._agent_out[written:]
        if engine.close_agent and not self._agent_out and not stdin.closed:
            stdin.close()
            self._closing_at = now

    def _start_agent(self) -> bool:
        if not self.agent_argv:
            self.engine.agent_failed("the conversation left the recording and no agent was given")
            return False
        try:
            self.agent = spawn_agent(self.agent_argv)
        except SpawnFailed as error:
            self.engine.agent_failed(str(error))
            return False
        assert self.agent.stdin is not None
        assert self.agent.stdout is not None
        assert self.agent.stderr is not None
        fd = self.agent.stdin.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._agent_fds = {self.agent.stdout.fileno(), self.agent.stderr.fileno()}
        return True

    def _read_agent(self, fd: int, now: int) -> None:
        assert self.agent is not None
        assert self.agent.stdout is not None
        chunk = os.read(fd, READ_SIZE)
        if fd != self.agent.stdout.fileno():  # stderr: passed on, and part of the episode
            if chunk:
                self.chunks.append((Direction.AGENT_STDERR, now, chunk))
                with contextlib.suppress(OSError):
                    os.write(2, chunk)
            else:
                self._agent_fds.discard(fd)
            return
        if chunk:
            self.chunks.append((Direction.AGENT_TO_CLIENT, now, chunk))
            for frame in self._splitter.feed(chunk):
                self.engine.agent_frame(bytes(frame.raw), now)
            return
        self._agent_fds.discard(fd)
        tail = self._splitter.finish()
        if tail is not None:
            self.engine.agent_frame(bytes(tail.raw), now)
        self.engine.agent_closed()
