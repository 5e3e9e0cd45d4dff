"""Redacted copies of recordings, made the first time a tool needs one.

Rules:
- A copy is exactly what ``acp-proxy redact`` would export (the bug-report redactor, one
  ``Redactor`` per connection, its row first, then its frames in order), imported into a
  private temporary database (folder 0700, file 0600) that is deleted when the server stops.
  Every tool reads a connection through its copy, so nothing recorded reaches a result
  without passing the redactor: frames, summaries, findings, transcripts and diffs alike.
- The detectors are this user's (``finder_for``: secret-looking environment variables, the
  home folder and user name, plus the shapes of known tokens).
- A copy keeps its source's ``seq`` numbers; its connection id is its own, so callers name
  connections by the source's id (``source_id``).
- Text the tools build from several frames (a conversation joins message chunks, so a
  secret split over two chunks appears whole only there) passes the copy's own ``Redactor``
  again (``redact_text``): the same placeholders, numbered on.
- ``leaks`` is the last gate: a tool's result, as JSON, through the verifier (the detectors
  run afresh, share/verify.py). What it finds is withheld, never returned.
- Without redaction (``--no-redact``) the source itself is handed out.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.share.redact import Redactor
from acp_proxy.share.redaction_io import redacted_export
from acp_proxy.share.secrets import Finder
from acp_proxy.share.verify import Leak, Verifier
from acp_proxy.store import readers as store_read
from acp_proxy.store.database import connect
from acp_proxy.store.importer import import_jsonl
from acp_proxy.store.search import IndexState, catch_up


class Copies:
    """The connections of ``source`` as tools may see them (redacted unless ``finder`` is None)."""

    def __init__(self, source: store_read.Database, finder: Finder | None) -> None:
        self.source = source
        self._finder = finder
        self._folder: Path | None = None
        self._db: store_read.Database | None = None
        self._ids: dict[int, int] = {}
        self._indexed: set[int] = set()
        self._redactors: dict[int, Redactor] = {}  # the redactor of each copy, by source id

    @property
    def redacting(self) -> bool:
        return self._finder is not None

    def connection_record(self, connection_id: int) -> dict[str, Any]:
        """The connection row as its copy has it (redacted), without copying any frame."""
        record = store_read.connection_record(self.source, connection_id)
        if self._finder is not None:
            Redactor(self._finder).connection(record)
        return record

    def redact_text(self, text: str, connection_id: int | None = None) -> str:
        """Recorded text (a session id, a label, a conversation) through the detectors: those
        of ``connection_id``'s copy (its placeholders) when it has one."""
        if self._finder is None:
            return text
        redactor = self._redactors.get(connection_id) if connection_id is not None else None
        return (redactor or Redactor(self._finder)).text(text)

    def leaks(self, result: Any) -> list[Leak]:
        """What in a tool's result still looks secret (nothing, without redaction)."""
        if self._finder is None:
            return []
        return Verifier(self._finder).json_document("result", orjson.dumps(result))

    def view(self, connection_id: int) -> tuple[store_read.Database, int]:
        """The database and connection id to read ``connection_id`` of the source through."""
        if self._finder is None:
            return self.source, connection_id
        known = self._ids.get(connection_id)
        if known is None:
            known = self._ids[connection_id] = self._copy(connection_id, self._finder)
        assert self._db is not None
        return self._db, known

    def _copy(self, connection_id: int, finder: Finder) -> int:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="acp-proxy-mcp-"))
        path = self._folder / "redacted.sqlite"
        spool = self._folder / f"export-{connection_id}.jsonl"
        redactor = self._redactors[connection_id] = Redactor(finder)
        try:
            with spool.open("wb") as out:
                redacted_export(self.source, connection_id, redactor, Verifier(finder), out)
            with spool.open("rb") as lines:
                copied = import_jsonl(path, lines)[0]
        finally:
            spool.unlink(missing_ok=True)
        if self._db is None:
            self._db = connect(path)
        return copied

    def searchable_view(self, connection_id: int) -> tuple[store_read.Database, int]:
        """``view``, with the copy's search index up to date (made on the first search)."""
        db, copied = self.view(connection_id)
        if db is not self.source and copied not in self._indexed:
            catch_up(db, IndexState(0, [copied]))
            self._indexed.add(copied)
        return db, copied

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
