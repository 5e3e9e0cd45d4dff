"""The recorder process: recording runs beside the proxy, never inside its forwarding.

Rules:
- ``start_recorder_process`` forks right after the agent is spawned, while the proxy has no
  threads yet (forking a threaded process is unsafe) and has imported little (a small parent
  makes a small child). The child is the recorder; the parent keeps only the writing end of
  the tap (a ``Tap``: see tap.py). What to record arrives later, as a ``CONFIG`` message.
- Why a process and not a thread: framing, JSON parsing and SQLite binding are Python work
  that holds the interpreter lock; in a thread they stall the forwarding threads (measured:
  see docs/performance.md). In a process of its own the recorder has its own lock and core.
- The child closes everything that belongs to the conversation (the agent's pipes, the
  client's stdin and stdout), so it can never keep a peer from seeing end of file. It keeps
  stderr for its own one-line reports. It ignores SIGINT, SIGTERM and SIGHUP: it ends when the
  tap closes, after committing everything it has read, even if the proxy was killed.
- In the child, one thread reads the tap into the recorder's queue (memory, then a spill file:
  see chunk_queue.py), so the tap's ring stays drained and forwarding does not wait while
  SQLite commits; the main thread records, in the idle scheduling class (it yields the core to
  forwarding and to the peers at once), while the reading thread keeps normal priority.
- When everything is committed the child tells the proxy through a second pipe (the proxy
  then exits), and only then runs its final WAL checkpoint: housekeeping never delays the
  client. The child's exit status: 0 when everything was recorded, 1 when it failed, 2 when
  the recording is incomplete (frames lost, counted in the database).
- Everything the child creates (the database, its WAL files, the spill file) is private: its
  umask is 077 (the agent, started before the fork, keeps the user's).
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from acp_proxy.record.spawn import enlarge_pipe
from acp_proxy.record.tap import (
    CHUNK,
    CONFIG,
    LOST,
    UPDATE,
    Channel,
    Tap,
    TapReader,
    decode_json,
    decode_lost,
)
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.chunk_queue import IncomingChunk
    from acp_proxy.record.recorder import Recorder, SinkFactory

RECORDER_NICENESS = 10


class RecorderProcess:
    """The parent's handle on the recorder process."""

    def __init__(self, pid: int, tap: Tap, committed_fd: int) -> None:
        self.pid = pid
        self.tap = tap
        self._committed_fd = committed_fd

    def finish(self, deadline: float) -> str:
        """Close the tap; wait up to ``deadline`` seconds for everything to be committed.

        Returns ``"recorded"``, ``"incomplete"`` (recorded, less frames that were lost and
        counted), ``"failed"`` (the recorder said why), ``"died"`` (the recorder process ended
        without a word) or ``"late"`` (still writing at the deadline). The recorder's final
        WAL checkpoint runs after this returns, in the background.
        """
        self.tap.close()
        return wait_for_commit(self._committed_fd, deadline)


_OUTCOMES = {b"1": "recorded", b"2": "incomplete", b"0": "failed"}


def wait_for_commit(committed_fd: int, deadline: float) -> str:
    """What the recorder says on ``committed_fd`` within ``deadline`` s (closing it): see
    ``RecorderProcess.finish`` for the outcomes."""
    try:
        ready, _, _ = select.select([committed_fd], [], [], max(0.0, deadline))
        if not ready:
            return "late"
        try:
            said = os.read(committed_fd, 1)
        except OSError:
            said = b""
        return _OUTCOMES.get(said, "died")
    finally:
        os.close(committed_fd)


def say_outcome(report: Reporter, outcome: str, deadline: float, pid: int, *, many: bool,
                what: str, after: str, lossy: str | None = None) -> None:  # fmt: skip
    """Say on stderr what an outcome means for ``what`` (``many``: several recordings, of which
    ``lossy`` lost frames), written on in the background once ``after`` (the connection ended)."""
    it, goes, was, is_ = ("they", "go", "were", "are") if many else ("it", "goes", "was", "is")
    if outcome == "late":
        report(
            f"{what} {was} still being written {deadline:g}s after {after}; {it} {goes} on "
            f"in the background (pid {pid})"
        )
    elif outcome == "incomplete":
        report(
            f"{lossy or what} {is_} incomplete: frames were lost, their count and why are in "
            f"the database (acp-proxy ls)"
        )
    elif outcome == "died":
        report(f"the recorder process ended early: {what} {is_} incomplete")


def fork_recorder(report: Reporter, child: Callable[[int], int]) -> tuple[int, int]:
    """Fork a recorder process that runs ``child(committed_fd)`` and exits with its status.

    The child's umask is 077 (everything it creates is private) and it never returns into the
    parent's code: a failure is said in one line (exit status 70). The parent gets the pid and
    the reading end of the pipe the child writes its outcome to (``wait_for_commit``).
    """
    committed_read, committed_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the recorder process
        status = 70
        try:
            os.umask(0o077)
            os.close(committed_read)
            status = child(committed_write)
        except BaseException as error:  # the child must never return into the parent's code
            report(f"the recorder failed: {type(error).__name__}: {error}")
        finally:
            os._exit(status)
    os.close(committed_write)
    return pid, committed_read


def start_recorder_process(
    clock_origin: tuple[int, int], report: Reporter, conversation_fds: Iterable[int],
    max_wait: float | None = None, sinks: SinkFactory | None = None,
) -> RecorderProcess:  # fmt: skip
    """Fork the recorder. ``conversation_fds`` are closed in the child (the agent's pipes).

    The recorder learns where and what to record from a ``CONFIG`` message (``tap.configure``);
    ``sinks`` (the command line's) makes the sinks that follow it.
    """
    channel = Channel()
    if channel.shared is None:
        enlarge_pipe(channel.write_fd)  # the pipe carries the chunks themselves

    def child(committed_fd: int) -> int:
        reader = channel.reader()
        _leave_the_conversation(conversation_fds)
        return record_from_tap(reader, clock_origin, report, committed_fd, sinks)

    pid, committed_read = fork_recorder(report, child)
    tap = channel.writer(report)
    if max_wait is not None:
        tap.max_wait = max_wait
    return RecorderProcess(pid, tap, committed_read)


def _leave_the_conversation(fds: Iterable[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def _yield_to_forwarding() -> None:
    """Let the forwarding threads (and the peers) win every contest for a core (this thread).

    In Linux's idle scheduling class the recorder is preempted at once whenever anything else
    wakes up on its core (a batch-class or niced process can keep the core for a millisecond
    or more, which showed as ping p99 spikes), and it runs freely whenever the core would
    otherwise idle. Under sustained load it falls behind and its queue spills to disk; it
    catches up when the load ends. Elsewhere: a niced process, or nothing.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(RECORDER_NICENESS)


def record_from_tap(
    tap: TapReader, clock_origin: tuple[int, int], report: Reporter, committed_fd: int,
    sinks: SinkFactory | None = None,
) -> int:  # fmt: skip
    """The recorder process's work: read the tap until EOF, record, return the exit status.

    Chunks wait in the queue until the ``CONFIG`` message says where to record (forwarding
    starts before the command line is read). Without one, nothing is recorded: the proxy
    stopped before it knew where to (a usage error). Once everything is committed it writes
    ``1`` (or ``0`` if the recording failed) to ``committed_fd`` so the proxy can exit, then
    checkpoints the WAL.
    """
    # Imported here, in the child: the parent (forwarding) never pays for SQLite.
    from pathlib import Path

    from acp_proxy.record.recorder import Recorder
    from acp_proxy.store.writer import NewConnection

    # The recorder makes no reference cycles; millions of short-lived rows would otherwise
    # trigger needless cyclic collections.
    gc.disable()
    from acp_proxy.record.chunk_queue import ChunkQueue

    queue = ChunkQueue(report=report)
    configured = threading.Event()
    settings: dict[str, Any] = {}
    early_updates: dict[str, Any] = {}
    lock = threading.Lock()
    recorder: Recorder | None = None

    def read_tap() -> None:
        try:
            for batch in tap.batches():
                chunks: list[IncomingChunk] = [
                    (d, ns, payload if kind == CHUNK else decode_lost(payload))
                    for kind, d, ns, payload in batch
                    if kind in (CHUNK, LOST)
                ]
                queue.put_many(chunks)
                for kind, _, _, payload in batch:
                    if kind == UPDATE:  # connection columns: their place among chunks is moot
                        with lock:
                            if recorder is None:
                                early_updates.update(decode_json(payload))
                            else:
                                recorder.set_connection(**decode_json(payload))
                    elif kind == CONFIG:
                        settings.update(decode_json(payload))
                        configured.set()
        finally:
            queue.close()
            configured.set()

    reader = threading.Thread(target=read_tap, name="acp-proxy tap reader", daemon=True)
    reader.start()
    # Only this thread (framing, parsing, SQLite) steps aside; the reader keeps its normal
    # priority, so the tap is drained promptly and forwarding never waits on it.
    _yield_to_forwarding()
    configured.wait()
    if not settings:
        reader.join()
        return 0
    with lock:
        recorder = Recorder(
            Path(settings["db"]), NewConnection(**settings["connection"]), queue, report,
            clock_origin=clock_origin,
        )  # fmt: skip
        recorder.set_connection(**early_updates)
        if settings.get("check"):
            from acp_proxy.record.live_check import LiveCheck

            recorder.live_check = LiveCheck(report)
        if sinks is not None:
            recorder.sinks += sinks(
                settings, settings["connection"], report, recorder.set_connection
            )
    recorder.run()
    reader.join()
    status = recorder.status
    outcome = b"1" if status.complete else b"0" if status.error is not None else b"2"
    with contextlib.suppress(OSError):  # the proxy may be gone (killed): nobody is waiting
        os.write(committed_fd, outcome)
        os.close(committed_fd)
    # The conversation is over for the client: let go of its stderr too, so nothing waits for
    # this housekeeping to end.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    recorder.checkpoint()
    return {b"1": 0, b"0": 1}.get(outcome, 2)
