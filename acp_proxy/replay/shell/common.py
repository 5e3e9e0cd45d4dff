"""What replay's two I/O shells share: the events, the decisions, and how bytes are cut.

Rules:
- Both shells (loop.py on anyio, for every run with an agent; plain.py on ``select.poll`` in
  one thread, for a client served from one recording) feed the conversation the same events
  and act on its ``Actions`` through the same ``Decisions``: what is handed to each side,
  every timeout (``Decisions.timeouts``, the one place they are decided), and what an input or
  a signal does. A shell only waits and moves bytes.
- Imports no event loop: plain replay's start-up never pays for one.
- A side is anything with the attributes ``Decisions`` reads (``pending``, ``progress``,
  ``gone`` for the client; ``pending``, ``progress``, ``broken``, ``closed_at``,
  ``listening`` for the agent) and ``send``; the agent also ``close_stdin`` and ``signal``.
"""

from __future__ import annotations

import math
import os
import select
import signal
import stat
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.replay.modes import Actions, Conversation

if TYPE_CHECKING:  # only --record brings the tap in
    from acp_proxy.record.tap import Tap

READ_SIZE = 65536
YIELD_AFTER = 1 << 20  # bytes written to a client that keeps up before anything else runs
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
Log = Callable[[Direction, int, bytes], None]
NO_AGENT = "the conversation left the recording and no agent was given"


class Input(NamedTuple):
    side: str  # "client" or "agent"
    now: int
    frames: list[bytes]
    ended: bool


class Poke(NamedTuple):
    """A side wrote, drained, closed or failed: the loop looks again."""


class Signalled(NamedTuple):
    signum: int


Event = Input | Poke | Signalled


class Outcome(NamedTuple):
    signal: int | None  # the first stopping signal received, if one ended the run
    agent_returncode: int | None  # how the agent ended (None: it never started)


def frames_of(splitter: LineSplitter, chunk: bytes) -> tuple[list[bytes], bool]:
    """The frames ``chunk`` completes; an empty chunk ends the input (and flushes a tail)."""
    if chunk:
        return [bytes(frame.raw) for frame in splitter.feed(chunk)], False
    tail = splitter.finish()
    return ([] if tail is None else [bytes(tail.raw)]), True


def write_slice(fd: int) -> int:
    """The most bytes one write to the client may take without ever blocking: ``PIPE_BUF``
    to a pipe, socket or terminal (the kernel takes that much whenever it reports room)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return select.PIPE_BUF
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd):
        return select.PIPE_BUF
    return 1 << 20


class ClientSide:
    """The client as both shells keep it: the bytes queued for it, when it last took some,
    whether it is gone, and the tap (``--record``) that sees each chunk read from it when read
    and each chunk for it when queued, as ``record`` does. A shell adds how it waits."""

    def __init__(self, stdin_fd: int, stdout_fd: int, tap: Tap | None) -> None:
        self.stdin_fd, self.stdout_fd, self.tap = stdin_fd, stdout_fd, tap
        self.pending = bytearray()
        self.progress = time.monotonic_ns()
        self.gone = False  # its end of stdout is closed (or stdout failed)
        self._slice = write_slice(stdout_fd)
        self._writable = select.poll()
        self._writable.register(stdout_fd, select.POLLOUT)

    def send(self, data: bytes, now: int) -> None:
        """Queue bytes for the client."""
        if self.tap is not None:
            self.tap.put(Direction.AGENT_TO_CLIENT, now, data)
        if not self.pending:
            self.progress = now
        self.pending += data

    def input_of(self, splitter: LineSplitter, chunk: bytes) -> Input:
        """What a chunk read from the client's stdin is (an empty one: its end)."""
        now = time.monotonic_ns()
        if self.tap is not None:
            self.tap.put(Direction.CLIENT_TO_AGENT, now, chunk)
        frames, ended = frames_of(splitter, chunk)
        return Input("client", now, frames, ended)


class Decisions:
    """A shell's decisions, shared by both shells (see the module rules)."""

    def __init__(self, conversation: Conversation, timeout_ns: int, grace_ns: int) -> None:
        self.conversation = conversation
        self.timeout_ns, self.grace_ns = timeout_ns, grace_ns
        self.client: Any = None
        self.agent: Any = None
        self.signalled: tuple[int, int] | None = None  # the first signal and when it came

    def hand_out(self, actions: Actions, now: int) -> None:
        if actions.to_client and self.client is not None:
            self.client.send(actions.to_client, now)
        if self.agent is not None:
            if actions.to_agent:
                self.agent.send(actions.to_agent, now)
            if actions.close_agent:
                self.agent.close_stdin()

    def timeouts(self, now: int, wake_at: int | None) -> tuple[bool, float]:
        """Every timeout of the run, in one place.

        Acts on those that have passed; returns whether the run ends now, and the earliest
        deadline (monotonic ns; infinite when only an event can change anything) for the
        shell's wait. A timeout acted on no longer holds, and its deadline, passed, has the
        shell step again at once.
        """
        conversation, client, agent = self.conversation, self.client, self.agent
        timeout, grace = self.timeout_ns, self.grace_ns
        deadlines = [] if wake_at is None else [wake_at]
        if self.signalled is not None:
            deadlines.append(self.signalled[1] + grace)
            if now >= deadlines[-1]:
                return True, now
        if client is not None and client.pending:
            deadlines.append(client.progress + timeout + 1)
            if now >= deadlines[-1]:
                conversation.stop(f"the client read nothing for {timeout / 1e9:g}s")
                return True, now
        if agent is not None and agent.pending and not agent.broken:
            deadlines.append(agent.progress + timeout + 1)
            if now >= deadlines[-1]:
                agent.pending.clear()
                conversation.agent_stalled(timeout / 1e9)
        if agent is not None and agent.closed_at is not None and agent.listening:
            deadlines.append(agent.closed_at + grace + 1)
            if now >= deadlines[-1]:
                agent.listening = False
                conversation.stop("the agent's output did not end after its stdin closed")
        return False, min(deadlines, default=math.inf)

    def handle(self, event: Event) -> None:
        conversation = self.conversation
        if isinstance(event, Input):
            if event.side == "client":
                for raw in event.frames:
                    conversation.client_frame(raw, event.now)
                if event.ended:
                    conversation.client_closed(event.now)
            elif self.agent is not None and self.agent.listening:
                for raw in event.frames:
                    conversation.agent_frame(raw, event.now)
                if event.ended:
                    self.agent.listening = False
                    conversation.agent_closed(event.now)
        elif isinstance(event, Signalled):
            now = time.monotonic_ns()
            if self.agent is not None:
                self.agent.signal(event.signum)
            if self.signalled is None:
                self.signalled = (event.signum, now)
            conversation.stop(f"ended by {signal.Signals(event.signum).name}")
