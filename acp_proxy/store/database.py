"""Opening a recording database, its write transactions, and what its failures become.

SQL lives in store/ and only there. This module opens files; schema.py holds the format and
its migrations, writer.py appends a connection's frames, summary.py reads one back.

Rules:
- One SQLite file holds many connections. WAL mode, ``synchronous=NORMAL``: a crash of the
  proxy loses at most the batch being written, never a committed one, and readers (``tail``,
  Datasette) never block the writer.
- The file is created private (private_files.py) and brought to the newest format on opening
  (schema.py); opened read-only it is never modified. Before anything is written to it, it
  must be new or already a recording database (ownership.py): another program's SQLite file
  is refused unchanged, whatever the command.
- Several proxies may append to one file at once, and create it at once: each uses its own
  connection, short ``BEGIN IMMEDIATE`` transactions and a busy timeout (the switch to WAL,
  which SQLite refuses at once while another connection holds a lock, is tried again for as
  long). A write lock still held by another writer when the timeout ends raises
  ``RecordingBusy``: the caller waits and retries; it is never a reason to stop recording.
- A recorder's connection (``recorder=True``) does not checkpoint the WAL on commit: the writer
  checkpoints when told to (writer.py says when).
- Failures become ``RecordingError`` (one root: ``AcpProxyError``); callers decide what to say.
  A file that is not a recording database (another program's SQLite, not SQLite, damaged, a
  newer format) is ``UnreadableRecording``: a REF that cannot be used (exit 2), for readers
  and writers alike; so is an empty file opened read-only.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from acp_proxy.errors import RecordingBusy, RecordingError, UnknownRecording, UnreadableRecording
from acp_proxy.store.ownership import require_ours
from acp_proxy.store.private_files import create_private_file
from acp_proxy.store.schema import SCHEMA_VERSION, migrate

BUSY_TIMEOUT_MS = 10_000
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (extended codes keep these in the low byte)
_UNUSABLE_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB: damaged, or not SQLite at all


def is_busy(error: sqlite3.Error) -> bool:
    """Whether ``error`` says another connection holds the lock (worth waiting for)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(error) or "busy" in str(error)


def connect(
    path: Path, *, create: bool = True, readonly: bool = False, recorder: bool = False
) -> sqlite3.Connection:
    """Open a recording database, creating and migrating it as needed.

    ``recorder=True`` leaves WAL checkpoints to the caller (see ``RecordingWriter.checkpoint``).
    """
    try:
        if create and not readonly:
            create_private_file(path)
        elif not path.exists():
            raise UnknownRecording(f"no recording database at {path}")
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        db = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
            check_same_thread=False,
        )  # fmt: skip
        try:
            require_ours(db, path, SCHEMA_VERSION, readonly=readonly)
            if not readonly:
                _use_wal(db)
                db.execute("PRAGMA synchronous=NORMAL")
                if recorder:
                    db.execute("PRAGMA wal_autocheckpoint=0")
            migrate(db, path, readonly=readonly)
        except BaseException:
            db.close()  # a caller that retries (busy) must not pile up open connections
            raise
    except (sqlite3.Error, OSError) as error:
        if readonly:
            raise UnreadableRecording(
                f"{path} is not a readable recording database: {error}"
            ) from None
        if isinstance(error, sqlite3.Error) and is_busy(error):
            raise RecordingBusy(f"cannot open recording database {path}: {error}") from error
        if getattr(error, "sqlite_errorcode", 0) & 0xFF in _UNUSABLE_CODES:
            raise UnreadableRecording(
                f"{path} is not a usable recording database: {error}"
            ) from None
        raise RecordingError(f"cannot open recording database {path}: {error}") from error
    return db


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch ``db`` to WAL. SQLite refuses the switch at once, without its busy handler,
    while another connection of a file still in its first journal mode holds a lock (several
    proxies creating one file): the switch is tried again until the busy timeout has passed,
    as any other statement waits."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as error:
            if not is_busy(error) or time.monotonic() >= deadline:
                raise
        else:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def error_for(error: sqlite3.Error, doing: str) -> RecordingError:
    """The store's error for ``error`` met while trying to ``doing``: busy, or not."""
    kind = RecordingBusy if is_busy(error) else RecordingError
    return kind(f"cannot {doing}: {error}")


class write_transaction:  # used like a function: with write_transaction(db):
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if kind is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")
