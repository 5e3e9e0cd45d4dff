"""The REF opener: what every command that reads a recording is given, made a recording.

Rules:
- A REF is, in this order: a recording file on disk (a JSONL export, a cassette of several
  episodes, a capture of another tool, a bug-report bundle: recording_files.py, importer.py),
  imported into a temporary database that is removed when the process exits; else a
  connection of the database (``--db``): ``last`` (the default), a connection id, a uid, a
  label or a session id.
- One set of messages, all ``BadReference`` (the command line: one line, exit 2): the database
  is missing, is not a recording database, or holds nothing yet; no connection matches; a REF
  written as a path (a folder separator, a recording file suffix) names no file; the file is a
  folder, or not a recording file (and why).
- "Newest" is the connection that started last (``started_ns``, then the id: an import keeps
  the start it had): ``last``, and a label or session id that several connections share,
  mean the newest; the opener says so
  on stderr (``note``), with the ids and how to choose another. A file of several episodes
  gives them all when the command takes them (``episodes=True``: ``check``, ``replay``),
  else the first, saying that there are more.
- ``sessions=True``: a REF that is a session id narrows the target to that session (``diff``,
  ``replay``); otherwise it names its whole connection.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.errors import BadReference, UnknownRecording, UnreadableRecording
from acp_proxy.stderr import Reporter, report
from acp_proxy.store.database import connect

if TYPE_CHECKING:
    from types import ModuleType

HOW_TO_NAME = "a connection id, a session id, a label, a uid, 'last', or a recording file"


@dataclass(frozen=True, slots=True)
class Scope:
    """What a REF names: a connection, possibly narrowed to one session."""

    connection_id: int
    session_id: str | None
    protocol_version: int | None
    label: str | None


@dataclass(frozen=True, slots=True)
class Opened:
    """An opened REF: the database holding it and its connections (several episodes of a file)."""

    db: sqlite3.Connection
    path: Path  # the database file (a temporary one for a recording file)
    targets: list[Scope]
    from_file: bool

    @property
    def target(self) -> Scope:
        return self.targets[0]

    @property
    def connection_id(self) -> int:
        return self.targets[0].connection_id


def _newest(db: sqlite3.Connection, query: str, ref: str, what: str, note: Reporter) -> int | None:
    ids = [int(row[0]) for row in db.execute(query, (ref,))]
    if len(ids) > 1:
        shown = ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"
        note(
            f"{what} {ref!r} names {len(ids)} connections ({shown}): this is the newest, "
            f"{ids[-1]}; give a connection id to choose another (acp-proxy ls)"
        )
    return ids[-1] if ids else None


def resolve_ref(db: sqlite3.Connection, ref: str | None, note: Reporter = report) -> int:
    """The connection id a database REF names (see the module rules); ``UnknownRecording``."""
    if ref is None or ref == "last":
        row = db.execute(
            "SELECT id FROM connection ORDER BY started_ns DESC, id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            raise UnknownRecording(f"{_where(db)} holds no recordings yet")
        return int(row[0])
    if ref.isdigit() and len(ref) < 19:  # beyond that it is no id SQLite can hold
        row = db.execute("SELECT id FROM connection WHERE id = ?", (int(ref),)).fetchone()
        if row is not None:
            return int(row[0])
    row = db.execute("SELECT id FROM connection WHERE uid = ?", (ref,)).fetchone()
    if row is not None:
        return int(row[0])
    for query, what in (
        ("SELECT id FROM connection WHERE label = ? ORDER BY started_ns, id", "label"),
        (
            "SELECT c.id FROM connection c WHERE c.id IN "
            "(SELECT connection_id FROM frame WHERE session_id = ?) ORDER BY c.started_ns, c.id",
            "session",
        ),
    ):
        found = _newest(db, query, ref, what, note)
        if found is not None:
            return found
    raise UnknownRecording(
        f"no recording matches {ref!r} in {_where(db)} (give {HOW_TO_NAME}; acp-proxy ls "
        "lists them)"
    )


def _where(db: sqlite3.Connection) -> str:
    row = db.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row is not None and row[2] else "the database"


def scope(
    db: sqlite3.Connection, ref: str | None, *, sessions: bool = False, note: Reporter = report
) -> Scope:
    """Resolve ``ref``; with ``sessions``, a REF that is a session id narrows to it."""
    connection_id = resolve_ref(db, ref, note)
    return _scope(db, connection_id, ref if sessions else None)


def connection_scope(db: sqlite3.Connection, connection_id: int) -> Scope:
    """The whole of connection ``connection_id`` (``UnknownRecording`` when there is none)."""
    return _scope(db, connection_id, None)


def _scope(db: sqlite3.Connection, connection_id: int, session_ref: str | None) -> Scope:
    row = db.execute(
        "SELECT protocol_version, label, uid FROM connection WHERE id = ?", (connection_id,)
    ).fetchone()
    if row is None:
        raise UnknownRecording(f"no connection {connection_id}")
    session = None
    if session_ref is not None and session_ref not in (str(connection_id), row[1], row[2], "last"):
        hit = db.execute(
            "SELECT 1 FROM frame WHERE session_id = ? AND connection_id = ? LIMIT 1",
            (session_ref, connection_id),
        ).fetchone()
        session = session_ref if hit else None
    return Scope(connection_id, session, row[0], row[1])


def _files() -> ModuleType:
    """recording_files.py, loaded only for a REF that may name a file (it loads zipfile)."""
    from acp_proxy.store import recording_files

    return recording_files


def _may_be_a_path(ref: str) -> bool:
    """False for what can only be a database REF (no separator, no dot, no ``~``): ``3``,
    ``last``, ``sess_1``; every recording file suffix has a dot."""
    return os.sep in ref or "." in ref or ref.startswith("~")


def _scratch_folder() -> Path:
    """A fresh temporary folder, removed when the process exits."""
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="acp-proxy-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def import_temporary(lines: Iterable[bytes], label: str | None = None) -> tuple[Path, list[int]]:
    """Import export (or capture) lines into a fresh temporary database, removed at exit.

    ``label`` names a capture of another tool that carries no label of its own.
    """
    from acp_proxy.store.importer import import_jsonl

    folder = _scratch_folder()
    db_path = folder / "recording.sqlite"
    return db_path, import_jsonl(db_path, lines, label=label)


def recording_file_episodes(ref: str) -> tuple[Path, list[int]]:
    """A recording file named as a REF: (its temporary database, every episode's connection)."""
    from acp_proxy.store.importer import ImportRefused

    try:
        return import_temporary(_files().frames_lines(Path(ref)), label=Path(ref).stem)
    except ImportRefused as error:
        raise UnreadableRecording(f"{ref}: not a recording file: {error}") from None


def import_recording_files(refs: Iterable[str]) -> Path:
    """Every episode of each recording file, in one temporary database (removed at exit)."""
    from acp_proxy.store.importer import ImportRefused, import_jsonl

    folder = _scratch_folder()
    db_path = folder / "recordings.sqlite"
    for ref in refs:
        if not _files().is_recording_file(ref):
            raise (
                _missing_file(ref)
                if not Path(ref).is_file()
                else UnreadableRecording(f"{ref}: not a recording file")
            )
        try:
            import_jsonl(db_path, _files().frames_lines(Path(ref)), label=Path(ref).stem)
        except ImportRefused as error:
            raise UnreadableRecording(f"{ref}: not a recording file: {error}") from None
    return db_path


def _open_file(ref: str, *, episodes: bool, note: Reporter) -> Opened:
    db_path, ids = recording_file_episodes(ref)
    if len(ids) > 1 and not episodes:
        note(f"{ref} holds {len(ids)} episodes; this is episode 1 (import the file to reach "
             "the others)")  # fmt: skip
        ids = ids[:1]
    db = connect(db_path, create=False, readonly=True)
    return Opened(db, db_path, [_scope(db, i, None) for i in ids], from_file=True)


def _missing_file(ref: str) -> BadReference:
    path = Path(ref).expanduser()
    if path.is_dir():
        return UnreadableRecording(f"{ref}: is a folder, not a recording file")
    if path.exists():
        return UnreadableRecording(
            f"{ref}: not a recording file (recording files are JSONL exports and cassettes, "
            f"bundles, or captures, named *{', *'.join(_files().SUFFIXES)})"
        )
    return UnknownRecording(f"{ref}: no such file")


def open_ref(
    ref: str | None,
    db_path: Path,
    *,
    episodes: bool = False,
    sessions: bool = False,
    note: Reporter = report,
) -> Opened:
    """Open what ``ref`` names (see the module rules), read-only; ``BadReference`` if nothing."""
    if ref is not None and os.path.isfile(ref) and _files().is_recording_file(ref):
        return _open_file(ref, episodes=episodes, note=note)
    if ref is not None and _may_be_a_path(ref) and _files().looks_like_a_file(ref):
        try:  # a label may be written like a path: the database still has its say
            db = connect(db_path, create=False, readonly=True)
        except BadReference:
            raise _missing_file(ref) from None
        try:
            return Opened(db, db_path, [scope(db, ref, sessions=sessions, note=note)], False)
        except UnknownRecording:
            db.close()
            raise _missing_file(ref) from None
    db = connect(db_path, create=False, readonly=True)
    return Opened(db, db_path, [scope(db, ref, sessions=sessions, note=note)], from_file=False)


def open_database(db_path: Path) -> sqlite3.Connection:
    """The recording database itself, read-only (``ls``, ``check --all``)."""
    return connect(db_path, create=False, readonly=True)
