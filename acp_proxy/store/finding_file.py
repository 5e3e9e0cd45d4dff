"""The findings of one inspector check, in a temporary SQLite file: the checker process writes
them, the server reads a frame's own or those of a range of frames. A long recording's findings
take disk, not the memory of the server or of the page.

Rules:
- One file per check, in a folder the server owns and deletes. The writer (the checker's
  process) creates it, in WAL mode and without syncing (nothing in it outlives the server), and
  commits each batch in one transaction before it says how far it has got; the reader opens it
  read-only once told the writer has said so (``writer_said``): before that it may not have
  its tables yet, and reads find nothing.
- A finding is kept as the JSON the page shows (``seq``, ``direction``, ``rule``, ``severity``,
  ``message``), in the order found; a rule's words (``summary``, ``fix``, ``source``) once per
  rule. Findings of no frame have no seq.
- Reads are bounded: a page of findings in order, or those of a range of frames, at most
  ``limit`` of them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rule (id TEXT PRIMARY KEY, words BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS finding (
    n INTEGER PRIMARY KEY, seq INTEGER, rule TEXT NOT NULL, body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS finding_by_seq ON finding (seq, n);
"""
FINDING_FIELDS = ("seq", "direction", "rule", "severity", "message")
RULE_FIELDS = ("summary", "fix", "source")


class FindingWriter:
    """The checker's side: adds findings, a batch per transaction."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.executescript(_SCHEMA)
        self._rules: set[str] = set()

    def add(self, findings: Iterable[Mapping[str, Any]]) -> None:
        """Add findings (each with ``FINDING_FIELDS`` and its rule's ``RULE_FIELDS``)."""
        rows, rules = [], []
        for found in findings:
            rule = str(found["rule"])
            rows.append((found["seq"], rule, orjson.dumps({k: found[k] for k in FINDING_FIELDS})))
            if rule not in self._rules:
                self._rules.add(rule)
                rules.append((rule, orjson.dumps({k: found.get(k) for k in RULE_FIELDS})))
        if not rows:
            return
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR IGNORE INTO rule (id, words) VALUES (?, ?)", rules)
            self._db.executemany("INSERT INTO finding (seq, rule, body) VALUES (?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()


class FindingReader:
    """The server's side: one read-only connection, shared by the request threads in turn."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._said = False

    def writer_said(self) -> None:
        """The writer has said how far it has got: the file and its tables are there."""
        self._said = True

    def _open(self) -> sqlite3.Connection | None:
        if self._db is None and self._said:
            self._db = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, check_same_thread=False
            )
            self._db.execute("PRAGMA busy_timeout = 10000")
        return self._db

    def _rows(self, sql: str, values: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            db = self._open()
            return [] if db is None else db.execute(sql, values).fetchall()

    def page(self, since: int, limit: int) -> list[tuple[str, bytes]]:
        """``(rule, JSON)`` of findings ``[since, since + limit)`` in the order found."""
        return [
            (r[0], r[1])
            for r in self._rows(
                "SELECT rule, body FROM finding ORDER BY n LIMIT ? OFFSET ?", (limit, since)
            )
        ]

    def between(self, first_seq: int, last_seq: int, limit: int) -> list[tuple[str, bytes]]:
        """``(rule, JSON)`` of the findings of frames ``first_seq`` to ``last_seq``, by frame."""
        return [
            (r[0], r[1])
            for r in self._rows(
                "SELECT rule, body FROM finding WHERE seq BETWEEN ? AND ? ORDER BY seq, n LIMIT ?",
                (first_seq, last_seq, limit),
            )
        ]

    def rules(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The words (JSON) of each of those rules."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        found = self._rows(f"SELECT id, words FROM rule WHERE id IN ({marks})", tuple(wanted))
        return {r[0]: r[1] for r in found}

    def of_frame(self, seq: int) -> list[dict[str, Any]]:
        """The findings of frame ``seq``, each with its rule's words."""
        found = self._rows(
            "SELECT f.body, r.words FROM finding f JOIN rule r ON r.id = f.rule "
            "WHERE f.seq = ? ORDER BY f.n",
            (seq,),
        )
        return [{**orjson.loads(body), **orjson.loads(words)} for body, words in found]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
