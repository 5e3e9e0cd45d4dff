"""One recording pipeline and lifecycle for everything that records a connection.

Rules:
- ``record``, ``replay --record``, ``replay --to-agent --record`` and the live part of
  ``replay --go-live --record`` (and the pytest plugin, which runs those commands) all record
  the same way: a ``Recording`` forks the recorder process (recorder_process.py), tells it
  where to record and the connection row (``connection_settings``, the one place that row is
  built), takes chunks ``put(direction, mono_ns, chunk)`` as they cross (through the tap:
  the same framing, observer, loss accounting and batching as ``record``), and ``finish``
  says how the connection ended and waits up to ``FLUSH_DEADLINE`` for the last commit.
- ``finish`` is where every recording's end is told on stderr, the same words for all: still
  being written at the deadline (``late``: it goes on in the background), incomplete (frames
  lost, counted in the database), or the recorder gone (``died``: then the proxy itself marks
  the connection ``incomplete``, found by its uid, since the recorder cannot).
- Streams a caller never ended (no empty chunk) are ended by ``finish``, so that an
  unterminated last line is recorded as ``record`` records it.
- Light to import (no ``pathlib``, no ``dataclasses``): it runs in ``record``'s start-up,
  before the agent is even spawned.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from acp_proxy import __version__
from acp_proxy.protocol.acp import Direction
from acp_proxy.record.recorder_process import RecorderProcess, say_outcome, start_recorder_process
from acp_proxy.record.tap import Tap
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from pathlib import Path

    from acp_proxy.record.recorder import SinkFactory

# Seconds a finished connection waits for its recorder to commit the rest before the proxy
# exits anyway (the recorder then goes on in the background).
FLUSH_DEADLINE = 30.0


class ChunkSink(Protocol):
    """Where an I/O shell puts what crosses: a ``Recording`` (or its ``Tap``)."""

    def put(self, direction: Direction, mono_ns: int, chunk: bytes) -> None:
        """One chunk that crossed, as read or written (``b""`` ends that direction)."""


def connection_settings(
    argv: Sequence[str], started_ns: int, label: str | None = None,
    client_argv: Sequence[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The connection row as the proxy knows it at the start (``NewConnection``'s fields)."""
    return {
        "argv": list(argv), "cwd": os.getcwd(), "proxy_version": __version__,
        "proxy_pid": os.getpid(), "label": label, "started_ns": started_ns,
        "uid": os.urandom(16).hex(),
        "client_argv": None if client_argv is None else list(client_argv),
    }  # fmt: skip


def client_command() -> list[str] | None:
    """The command line of the process that started this one: the client, for ``record``.

    Read from ``/proc`` (Linux); None where there is none to read or it cannot be read.
    """
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    return words or None


class Recording:
    """A connection being recorded: chunks in with ``put``, then ``finish``."""

    def __init__(
        self, recorder: RecorderProcess, db_path: str, connection: dict[str, Any],
        report: Reporter,
    ) -> None:  # fmt: skip
        self.recorder = recorder
        self.db_path = db_path
        self.uid: str = connection["uid"]
        self._report = report
        self._ended: set[Direction] = set()
        self.outcome: str | None = None

    @classmethod
    def start(
        cls,
        db_path: str | Path,
        argv: Sequence[str],
        report: Reporter,
        *,
        label: str | None = None,
        check: bool = False,
        clock_origin: tuple[int, int] | None = None,
        started_ns: int | None = None,
        conversation_fds: Iterable[int] = (),
        max_wait: float | None = None,
        otlp: dict[str, object] | None = None,
        client_argv: Sequence[str] | None = None,
        remote_url: str | None = None,
        sinks: SinkFactory | None = None,
    ) -> Recording:
        """Fork the recorder and tell it where and what to record.

        ``clock_origin`` is (monotonic, wall) ns at the connection's start; ``conversation_fds``
        are closed in the recorder (the agent's pipes); ``max_wait`` bounds how long ``put``
        may wait for the recorder (tap.py); ``otlp`` is the setting of the live span export, for
        the sink ``sinks`` (the command line's list of sinks) makes of it; ``client_argv`` is
        the client's command line, when known; ``remote_url`` the remote agent a stdio
        recording bridges to (``record --connect``).
        """
        origin = clock_origin or (time.monotonic_ns(), time.time_ns())
        recorder = start_recorder_process(origin, report, conversation_fds, max_wait, sinks)
        connection = connection_settings(argv, started_ns or origin[1], label, client_argv)
        if remote_url is not None:
            connection["remote_url"] = remote_url
        recorder.tap.configure(db=str(db_path), check=check, connection=connection, otlp=otlp)
        return cls(recorder, str(db_path), connection, report)

    @property
    def tap(self) -> Tap:
        return self.recorder.tap

    @property
    def pid(self) -> int:
        return self.recorder.pid

    def put(self, direction: Direction, mono_ns: int, chunk: bytes) -> None:
        """Record one chunk that crossed (``b""`` ends that direction's stream)."""
        if not chunk:
            self._ended.add(direction)
        self.recorder.tap.put(direction, mono_ns, chunk)

    def update(self, **columns: Any) -> None:
        """Set connection columns (agent pid ...), in their place among the chunks."""
        self.recorder.tap.update(**columns)

    def finish(
        self,
        *,
        exit_code: int | None = None,
        exit_signal: int | None = None,
        status: str | None = None,
        ended_ns: int | None = None,
        deadline: float = FLUSH_DEADLINE,
        what: str = "the recording",
    ) -> str:
        """Say how the connection ended, wait for the last commit; return the outcome.

        The outcome is ``RecorderProcess.finish``'s; ``what`` names the recording in messages.
        """
        now = time.monotonic_ns()
        for direction in Direction:
            if direction not in self._ended:
                self.put(direction, now, b"")
        self.update(
            status=status or ("signalled" if exit_signal is not None else "exited"),
            ended_ns=ended_ns or time.time_ns(), exit_code=exit_code, exit_signal=exit_signal,
        )  # fmt: skip
        outcome = self.outcome = self.recorder.finish(deadline)
        say_outcome(self._report, outcome, deadline, self.pid, many=False, what=what,
                    after="the connection ended")  # fmt: skip
        if outcome == "died":
            self._mark_died(exit_code, exit_signal, ended_ns or time.time_ns())
        return outcome

    def _mark_died(self, exit_code: int | None, exit_signal: int | None, ended_ns: int) -> None:
        """The recorder is gone: say so, with how the agent ended (the recorder never wrote
        it), and that no process writes the connection any more."""
        from pathlib import Path

        from acp_proxy.errors import RecordingError
        from acp_proxy.store.writer import update_by_uid

        try:
            update_by_uid(
                Path(self.db_path), self.uid, status="incomplete",
                error="frames not recorded: the recorder process ended early",
                exit_code=exit_code, exit_signal=exit_signal, ended_ns=ended_ns,
                recorder_pid=None,
            )  # fmt: skip
        except RecordingError as error:
            self._report(f"{error}; the connection could not be marked incomplete")

    def connection_id(self) -> int | None:
        """The recorded connection's id (after ``finish``), or None if it has no row."""
        from pathlib import Path

        from acp_proxy.errors import RecordingError
        from acp_proxy.store.writer import connection_id_of_uid

        try:
            return connection_id_of_uid(Path(self.db_path), self.uid)
        except RecordingError:
            return None
