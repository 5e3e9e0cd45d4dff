"""The recorder process: recording runs beside the proxy, never inside its forwarding.

Rules:
- ``start_recorder_process`` forks right after the agent is spawned, while the proxy has no
  threads yet (forking a threaded process is unsafe). The child is the recorder; the parent
  keeps only the write end of the tap pipe (a ``PipeTap``).
- Why a process and not a thread: framing, JSON parsing and SQLite binding are Python work
  that holds the interpreter lock; in a thread they stall the forwarding threads (measured:
  see docs/performance.md). In a process of its own the recorder has its own lock and core.
- The child closes everything that belongs to the conversation (the agent's pipes, the
  client's stdin and stdout), so it can never keep a peer from seeing end of file. It keeps
  stderr for its own one-line reports. It ignores SIGINT, SIGTERM and SIGHUP: it ends when the
  tap pipe closes, after committing everything it has read, even if the proxy was killed.
- In the child, one thread reads the pipe into the recorder's queue (memory, then a spill file:
  see chunk_queue.py), so the pipe stays drained and forwarding does not wait while SQLite
  commits; the main thread records.
- When everything is committed the child tells the proxy through a second pipe (the proxy
  then exits), and only then runs its final WAL checkpoint: housekeeping never delays the
  client. The child's exit status: 0 when everything was recorded, 1 when it failed.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import select
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .tap import CHUNK, UPDATE, PipeTap, TapReader, decode_update

if TYPE_CHECKING:
    from .store import NewConnection

PIPE_SIZE = 1024 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
Reporter = Callable[[str], None]


class RecorderProcess:
    """The parent's handle on the recorder process."""

    def __init__(self, pid: int, tap: PipeTap, committed_fd: int) -> None:
        self.pid = pid
        self.tap = tap
        self._committed_fd = committed_fd

    def finish(self, deadline: float) -> bool | None:
        """Close the tap; wait up to ``deadline`` seconds for everything to be committed.

        True when all was recorded, False when the recording failed, None on timeout. The
        recorder's final WAL checkpoint runs after this returns, in the background.
        """
        self.tap.close()
        try:
            ready, _, _ = select.select([self._committed_fd], [], [], deadline)
            if not ready:
                return None
            return os.read(self._committed_fd, 1) == b"1"
        finally:
            os.close(self._committed_fd)


def start_recorder_process(
    db_path: Path,
    new_connection: NewConnection,
    clock_origin: tuple[int, int],
    report: Reporter,
    conversation_fds: Iterable[int],
) -> RecorderProcess:
    """Fork the recorder. ``conversation_fds`` are closed in the child (the agent's pipes)."""
    read_fd, write_fd = os.pipe()
    committed_read, committed_write = os.pipe()
    with contextlib.suppress(OSError):  # a bigger pipe absorbs bursts; the default also works
        fcntl.fcntl(write_fd, _F_SETPIPE_SZ, PIPE_SIZE)
    pid = os.fork()
    if pid == 0:  # the recorder process
        status = 70
        try:
            os.close(write_fd)
            os.close(committed_read)
            _leave_the_conversation(conversation_fds)
            status = record_from_pipe(
                read_fd, db_path, new_connection, clock_origin, report, committed_write
            )
        except BaseException as error:  # the child must never return into the parent's code
            report(f"the recorder failed: {type(error).__name__}: {error}")
        finally:
            os._exit(status)
    os.close(read_fd)
    os.close(committed_write)
    return RecorderProcess(pid, PipeTap(write_fd), committed_read)


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


def record_from_pipe(
    read_fd: int,
    db_path: Path,
    new_connection: NewConnection,
    clock_origin: tuple[int, int],
    report: Reporter,
    committed_fd: int,
) -> int:
    """The recorder process's work: read the tap until EOF, record, return the exit status.

    Once everything is committed it writes ``1`` (or ``0`` if the recording failed) to
    ``committed_fd`` so the proxy can exit, then checkpoints the WAL.
    """
    # Imported here, in the child: the parent (forwarding) never pays for SQLite.
    from .chunk_queue import ChunkQueue
    from .recorder import Recorder

    # The recorder makes no reference cycles; millions of short-lived rows would otherwise
    # trigger needless cyclic collections.
    gc.disable()
    queue = ChunkQueue(report=report)
    recorder = Recorder(db_path, new_connection, queue, report, clock_origin=clock_origin)

    def read_tap() -> None:
        try:
            for kind, direction, mono_ns, payload in TapReader(read_fd).messages():
                if kind == CHUNK:
                    queue.put(direction, mono_ns, payload)
                elif kind == UPDATE:
                    recorder.set_connection(**decode_update(payload))
        finally:
            queue.close()

    reader = threading.Thread(target=read_tap, name="acp-proxy tap reader", daemon=True)
    reader.start()
    recorder.run()
    reader.join()
    recorded = recorder.status.error is None
    with contextlib.suppress(OSError):  # the proxy may be gone (killed): nobody is waiting
        os.write(committed_fd, b"1" if recorded else b"0")
        os.close(committed_fd)
    # The conversation is over for the client: let go of its stderr too, so nothing waits for
    # this housekeeping to end.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    recorder.checkpoint()
    return 0 if recorded else 1
