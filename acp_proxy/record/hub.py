"""The recording pipeline for many connections at once, fed whole messages (remote traffic).

Rules:
- ``RecordingHub.start`` forks one recorder process (hub_recorder.py) for a whole listener,
  before the caller has any thread or event loop (forking a threaded process is unsafe), and
  keeps only the writing end of a pipe to it. Every transport connection (an
  ``Acp-Connection-Id``, one WebSocket) is ``open``-ed as one recorded connection in the same
  database, with the connection row built as ``record/recording.py`` builds it
  (``connection_settings``) plus how it is carried.
- Remote traffic arrives already framed (a POST body, an SSE event's data, a WebSocket text
  message), so the hub takes whole messages, ``message(key, direction, mono_ns, raw, ...)``,
  each one frame, never split or glued; the recorder gives it the same observer verdict as a
  stdio line (protocol/observer.py) and stores its transport facts beside it (store/remote.py).
- Nothing here blocks: records go to the pipe with non-blocking writes, and what the pipe does
  not take waits in memory, in order. ``message`` refuses (returns False) once
  ``MAX_PENDING_BYTES`` wait; the caller then waits for room at most ``--max-recorder-wait``
  (``room`` says when there is some) and otherwise drops the message from the recording with
  ``lost`` (counted in the database, said once on stderr). Control records (open, exchange,
  update, close, lost, a stderr line) are always taken: they are small and one per request (a
  stderr line: one per connection) at most.
- The owner drives the pipe: when ``pending`` is not zero it calls ``flush`` once ``fileno()``
  is writable (an event loop's writer callback); ``finish`` sends the rest, closes the pipe
  and waits up to a deadline for the recorder's last commit, like ``Recording.finish``.
  ``flush`` writes the whole records that wait together in one write (up to 1 MiB), so a
  recorder that fell behind is caught up with few system calls, not one per message.
- No asyncio or anyio here (record/'s rule): the owner's event loop stays in remote/.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.hub_pipe import (
    CLOSE,
    CONFIG,
    DIRECTION_CODES,
    EXCHANGE,
    EXCHANGE_SET,
    HEADER,
    LOST,
    MESSAGE,
    OPEN,
    STDERR,
    STREAM_CODES,
    UPDATE,
)
from acp_proxy.record.recorder_process import fork_recorder, say_outcome, wait_for_commit
from acp_proxy.record.recording import FLUSH_DEADLINE, connection_settings
from acp_proxy.record.spawn import enlarge_pipe
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from pathlib import Path

    from acp_proxy.record.recorder import SinkFactory

# Bytes of messages that may wait for the pipe before ``message`` refuses more.
MAX_PENDING_BYTES = 32 * 1024 * 1024
# The largest write handed to the pipe at once.
_WRITE_BYTES = 1024 * 1024
STALL_REASON = "the recorder fell behind (forwarding waits at most {wait:g}s for it)"


class RecordingHub:
    """The listener's handle on its recorder process (one thread uses it)."""

    def __init__(self, pid: int, fd: int, committed_fd: int, report: Reporter) -> None:
        self.pid = pid
        self._fd = fd
        self._committed_fd = committed_fd
        self._report = report
        self._queue: deque[bytes] = deque()
        self._head_sent = 0  # bytes of the queue's first record already written
        self.pending = 0  # bytes waiting for the pipe
        self._next_key = 0
        self._exchanges: dict[int, int] = {}
        self._gone = False
        self._said_losses: set[str] = set()  # each reason for losses is said once
        self.lost_messages = 0
        self.outcome: str | None = None

    @classmethod
    def start(
        cls, db_path: str | Path, report: Reporter, *, check: bool = False,
        otlp: dict[str, object] | None = None, clock_origin: tuple[int, int] | None = None,
        sinks: SinkFactory | None = None, close_in_child: Iterable[int] = (),
    ) -> RecordingHub:  # fmt: skip
        """Fork the recorder process; call it before any thread or event loop exists.

        ``sinks`` (the command line's, cli/sinks.py) makes each connection's sinks;
        ``close_in_child``: descriptors the recorder must not keep (the listening socket).
        """
        from acp_proxy.record.hub_recorder import record_from_pipe

        origin = clock_origin or (time.monotonic_ns(), time.time_ns())
        read_fd, write_fd = os.pipe()
        enlarge_pipe(write_fd)

        def child(committed_fd: int) -> int:
            os.close(write_fd)
            for fd in close_in_child:
                with contextlib.suppress(OSError):
                    os.close(fd)
            return record_from_pipe(read_fd, origin, report, committed_fd, sinks)

        pid, committed_read = fork_recorder(report, child)
        os.close(read_fd)
        os.set_blocking(write_fd, False)
        hub = cls(pid, write_fd, committed_read, report)
        hub._control(CONFIG, 0, {"db": str(db_path), "check": check, "otlp": otlp})
        return hub

    # --- what crosses ------------------------------------------------------------------

    def open(
        self, transport: str, *, remote_url: str | None, listen_url: str | None = None,
        client_address: str | None = None, label: str | None = None,
        started_ns: int | None = None, argv: Sequence[str] = (),
    ) -> tuple[int, str]:  # fmt: skip
        """A new recorded connection; returns its key (for the calls below) and its uid.
        ``argv``: the command that served it, when that is not the reverse proxy (a replay)."""
        self._next_key += 1
        key = self._next_key
        settings = connection_settings(argv, started_ns or time.time_ns(), label)
        settings.update(
            transport=transport, remote_url=remote_url, listen_url=listen_url,
            client_address=client_address,
        )  # fmt: skip
        self._exchanges[key] = 0
        self._control(OPEN, key, settings)
        return key, str(settings["uid"])

    def exchange(self, key: int, mono_ns: int, **columns: Any) -> int:
        """A new HTTP exchange (request) of connection ``key``; returns its seq."""
        seq = self._exchanges[key] = self._exchanges.get(key, 0) + 1
        self._control(EXCHANGE, key, {**columns, "seq": seq}, exchange_seq=seq, mono_ns=mono_ns)
        return seq

    def exchange_set(self, key: int, exchange_seq: int, **columns: Any) -> None:
        """Columns learnt later about an exchange (status, answer headers, end, error)."""
        self._control(EXCHANGE_SET, key, columns, exchange_seq=exchange_seq)

    def message(
        self, key: int, direction: Direction, mono_ns: int, raw: bytes, exchange_seq: int,
        stream: str,
    ) -> bool:  # fmt: skip
        """One whole message that crossed; False when too much waits (see the rules)."""
        if self._gone:
            return True
        if self.pending >= MAX_PENDING_BYTES:
            return False
        header = HEADER.pack(
            MESSAGE, DIRECTION_CODES[direction], STREAM_CODES[stream], key, exchange_seq,
            mono_ns, len(raw),
        )  # fmt: skip
        self._send(header + raw)
        return True

    def messages(
        self, key: int, direction: Direction, mono_ns: int, raws: list[bytes],
        exchange_seq: int, stream: str,
    ) -> bool:  # fmt: skip
        """``message`` for several at once (one read's events): one write for all of them."""
        if self._gone:
            return True
        if self.pending >= MAX_PENDING_BYTES:
            return False
        pack = HEADER.pack
        code, stream_code = DIRECTION_CODES[direction], STREAM_CODES[stream]
        parts: list[bytes] = []
        for raw in raws:
            parts.append(pack(MESSAGE, code, stream_code, key, exchange_seq, mono_ns, len(raw)))
            parts.append(raw)
        self._send(b"".join(parts))
        return True

    def lost(
        self, key: int, direction: Direction, size: int, wait: float, reason: str | None = None
    ) -> None:
        """A message left out of the recording after waiting ``wait`` seconds for room."""
        self.lost_messages += 1
        why = reason or STALL_REASON.format(wait=wait)
        if why not in self._said_losses:
            self._said_losses.add(why)
            self._report(f"{why}: messages are left out of the recording and counted")
        self._control(
            LOST, key, {"direction": direction.value, "frames": 1, "bytes": size, "reason": why}
        )

    def stderr_line(self, key: int, mono_ns: int, line: bytes) -> None:
        """A line the agent side of connection ``key`` wrote to its stderr (a replay's summary),
        ``line`` with its line break; always taken, as a control record is."""
        if not self._gone:
            self._send(HEADER.pack(STDERR, 0, 0, key, 0, mono_ns, len(line)) + line)

    def update(self, key: int, **columns: Any) -> None:
        """Set columns of connection ``key``'s row (its ``Acp-Connection-Id`` ...)."""
        self._control(UPDATE, key, columns)

    def close(
        self, key: int, status: str, error: str | None = None, ended_ns: int | None = None
    ) -> None:
        """Connection ``key`` is over (``closed`` or ``dropped``: docs/recording-format.md)."""
        self._exchanges.pop(key, None)
        self._control(
            CLOSE, key, {"status": status, "error": error, "ended_ns": ended_ns or time.time_ns()}
        )

    @property
    def room(self) -> bool:
        """Whether ``message`` takes messages again."""
        return self.pending < MAX_PENDING_BYTES

    # --- the pipe ----------------------------------------------------------------------

    def fileno(self) -> int:
        return self._fd

    def _control(
        self, kind: int, key: int, value: dict[str, Any], *, exchange_seq: int = 0,
        mono_ns: int = 0,
    ) -> None:  # fmt: skip
        if self._gone:
            return
        payload = orjson.dumps(value, default=str)
        self._send(HEADER.pack(kind, 0, 0, key, exchange_seq, mono_ns, len(payload)) + payload)

    def _send(self, record: bytes) -> None:
        if not self._queue:
            try:
                written = os.write(self._fd, record)
            except BlockingIOError:
                written = 0
            except OSError:
                self._lose_recorder()
                return
            if written == len(record):
                return
            self._head_sent = written
        self._queue.append(record)
        self.pending += len(record)

    def flush(self) -> None:
        """Write what waits, as far as the pipe takes it (never blocks): whole records that
        wait together go in one write, up to ``_WRITE_BYTES``."""
        queue = self._queue
        while queue and not self._gone:
            head = queue[0]
            if self._head_sent or len(queue) == 1 or len(head) >= _WRITE_BYTES:
                piece: bytes | memoryview = memoryview(head)[
                    self._head_sent : self._head_sent + _WRITE_BYTES
                ]
            else:
                parts: list[bytes] = []
                size = 0
                for record in queue:
                    if size + len(record) > _WRITE_BYTES:
                        break
                    parts.append(record)
                    size += len(record)
                piece = b"".join(parts)
            try:
                written = os.write(self._fd, piece)
            except BlockingIOError:
                return
            except OSError:
                self._lose_recorder()
                return
            while written:
                head = queue[0]
                left = len(head) - self._head_sent
                if written < left:
                    self._head_sent += written
                    break
                written -= left
                queue.popleft()
                self.pending -= len(head)
                self._head_sent = 0

    def _lose_recorder(self) -> None:
        self._gone = True
        self._queue.clear()
        self.pending = 0

    def finish(self, deadline: float = FLUSH_DEADLINE) -> str:
        """Send the rest, close the pipe, wait up to ``deadline`` s for the last commit.

        The outcome is ``RecorderProcess.finish``'s: ``recorded``, ``incomplete``, ``failed``,
        ``died`` or ``late``; it is said on stderr as ``Recording.finish`` says it.
        """
        end = time.monotonic() + deadline
        while self._queue and not self._gone:
            left = end - time.monotonic()
            if left <= 0:
                break
            _, writable, _ = select.select([], [self._fd], [], left)
            if writable:
                self.flush()
        os.close(self._fd)
        outcome = self.outcome = wait_for_commit(self._committed_fd, end - time.monotonic())
        say_outcome(self._report, outcome, deadline, self.pid, many=True, what="the recordings",
                    after="the listener stopped", lossy="some recordings")  # fmt: skip
        return outcome
