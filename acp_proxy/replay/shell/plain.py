"""Replay's plain I/O shell: a client served from one recording, in one thread, on ``poll``.

Rules:
- For a conversation with a client and no agent (``replay REF``, with or without
  ``--record``): no event loop to import or start, so the client's first answer comes as soon
  as the recording is loaded. Everything with an agent, and ``--listen``, runs on anyio
  (loop.py).
- The same decisions as loop.py (common.py ``Decisions``: what each side is handed, every
  timeout, what an input or a signal does); only the waiting differs: one ``poll`` on the
  client's stdin (while it is read), its stdout (while bytes wait for it) and a wake-up pipe of
  the signal handlers, until the earliest deadline ``Decisions.timeouts`` gives.
- The client's descriptors are never changed (no ``O_NONBLOCK``, as in ports.py): stdin is
  read once per readiness, stdout is written at most ``write_slice`` bytes per readiness, and a
  client that keeps up is written to for at most ``YIELD_AFTER`` bytes before the loop steps
  again. Descriptors that cannot be polled (regular files, ``/dev/null``) are always ready.
- SIGINT, SIGTERM and SIGHUP are caught from the start of the run to its end (the previous
  handlers and wake-up descriptor are put back): each stops the conversation, as in loop.py.
- With a tap (``--record``) every chunk read is put on it when read and every chunk for the
  client when queued, as ``record`` does.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import time
from types import FrameType
from typing import TYPE_CHECKING

from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.replay.modes import Conversation
from acp_proxy.replay.shell.common import (
    NO_AGENT,
    READ_SIZE,
    STOPPING,
    YIELD_AFTER,
    ClientSide,
    Decisions,
    Input,
    Outcome,
    Signalled,
)

if TYPE_CHECKING:  # only --record brings the tap in
    from acp_proxy.record.tap import Tap

_READ = select.POLLIN | select.POLLHUP | select.POLLERR
_WRITE = select.POLLOUT  # an error or hang-up is reported whatever the mask: a write says it


def serve_client(
    conversation: Conversation, timeout_ns: int, grace_ns: int, *, tap: Tap | None = None,
    stdin_fd: int = 0, stdout_fd: int = 1,
) -> Outcome:  # fmt: skip
    """Run ``conversation`` (a client, never an agent) to its end (see the module rules)."""
    return PlainShell(conversation, timeout_ns, grace_ns, tap, stdin_fd, stdout_fd).run()


class PlainClient(ClientSide):
    """The client: its frames from ``stdin_fd``, our bytes to it on ``stdout_fd``."""

    def __init__(self, stdin_fd: int, stdout_fd: int, tap: Tap | None) -> None:
        super().__init__(stdin_fd, stdout_fd, tap)
        self.reading = True  # its stdin is read (not once it ended or the run is over)
        self._splitter = LineSplitter()

    def read(self) -> Input | None:
        """One read of stdin, as the input it is (None: nothing after all)."""
        try:
            chunk = os.read(self.stdin_fd, READ_SIZE)
        except BlockingIOError:  # someone else's O_NONBLOCK, or a spurious wake-up
            return None
        except OSError:  # a hung-up terminal, a closed descriptor: the input ended
            chunk = b""
        event = self.input_of(self._splitter, chunk)
        if event.ended:
            self.reading = False
        return event

    def write(self) -> None:
        """Write what is queued while the client takes it (at most ``YIELD_AFTER`` bytes)."""
        written_here = 0
        while self.pending and written_here < YIELD_AFTER:
            try:
                written = os.write(self.stdout_fd, self.pending[: self._slice])
            except BlockingIOError:
                return
            except OSError:  # EPIPE: the client closed its end
                self.gone = True
                self.pending.clear()
                return
            del self.pending[:written]
            self.progress = time.monotonic_ns()
            written_here += written
            if not self._writable.poll(0):
                return


class PlainShell(Decisions):
    def __init__(
        self, conversation: Conversation, timeout_ns: int, grace_ns: int, tap: Tap | None,
        stdin_fd: int, stdout_fd: int,
    ) -> None:  # fmt: skip
        super().__init__(conversation, timeout_ns, grace_ns)
        self.client: PlainClient = PlainClient(stdin_fd, stdout_fd, tap)
        self._signals: list[int] = []

    def run(self) -> Outcome:
        wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        previous = {signum: signal.getsignal(signum) for signum in STOPPING}

        def caught(signum: int, _frame: FrameType | None) -> None:
            self._signals.append(signum)

        old_wakeup = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        try:
            for signum in STOPPING:
                signal.signal(signum, caught)
            self._run(wake_read)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_read)
            os.close(wake_write)
        return Outcome(self.signalled[0] if self.signalled else None, None)

    def _run(self, wake_read: int) -> None:
        conversation, client = self.conversation, self.client
        while True:
            now = time.monotonic_ns()
            actions = conversation.step(now)
            if actions.wants_agent:  # never, for a client served from one recording
                conversation.agent_failed(NO_AGENT)
            self.hand_out(actions, now)
            if client.gone:
                conversation.stop("the client closed its end of the connection")
                return
            if actions.done:
                client.reading = False
                if not client.pending:
                    return
            end, deadline = self.timeouts(now, actions.wake_at)
            if end:
                return
            self._wait(wake_read, deadline)

    def _wait(self, wake_read: int, deadline: float) -> None:
        """Wait until a descriptor is ready or ``deadline`` passes; handle what happened."""
        client = self.client
        masks = {wake_read: select.POLLIN}
        if client.reading:
            masks[client.stdin_fd] = _READ
        if client.pending:  # stdin and stdout may be one socket: one registration, both masks
            masks[client.stdout_fd] = masks.get(client.stdout_fd, 0) | _WRITE
        ready = select.poll()
        for fd, mask in masks.items():
            ready.register(fd, mask)
        wait_ms = None
        if deadline != math.inf:
            wait_ms = max(0, math.ceil((deadline - time.monotonic_ns()) / 1e6))
        for fd, events in ready.poll(wait_ms):
            if fd == wake_read:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_read, 64):
                        pass
                continue
            if fd == client.stdin_fd and client.reading and events & (_READ | select.POLLNVAL):
                event = client.read()
                if event is not None:
                    self.handle(event)
            if fd == client.stdout_fd and client.pending and events & ~select.POLLIN:
                client.write()
        while self._signals:
            self.handle(Signalled(self._signals.pop(0)))
