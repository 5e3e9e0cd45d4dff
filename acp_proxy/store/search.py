"""Searching recorded frames: the full-text index's catch-up, and both kinds of query.

Rules:
- Full text (the default) asks the FTS5 index (schema.py, format 5) for the pattern as one
  phrase, case- and accent-insensitive, its last word a prefix (``permission den`` finds
  ``permission denied``). Every character of the pattern is taken literally: FTS5 operators,
  quotes and ``*`` are words or separators, never syntax. A pattern with no word in it at all
  (only punctuation) cannot be asked of the index: it is looked for as a substring of the same
  text the index holds (``frame_text``), frame by frame.
- A hit's snippet is cut from the frame's JSON (snippet.py), not from the words the index
  holds; when the match cannot be found there, the index's own snippet is kept.
- A regular expression is matched against each frame's recorded line as UTF-8, without its
  newline: JSON escapes stay as they were recorded, ``$`` matches at the line's end as in
  Python, and the bytes are searched as they are stored (no decoding per frame; a snippet is
  decoded, undecodable bytes as U+FFFD). The engine is
  RE2: its time is linear in the text, whatever the pattern, so a pattern cannot freeze a
  search by backtracking. Its syntax is Python's for everything but backreferences and
  lookaround, which it refuses (``BadPattern``, with a sentence saying so), as it refuses a
  pattern too large to compile in ``REGEX_MEMORY`` bytes.
- Hits come in the order frames were recorded (``frame.id``), across connections; ``after``
  (a hit's ``frame_id``) continues a search where a page ended.
- ``catch_up`` indexes what the recorder did not (frames recorded before format 5, imported
  recordings, a recorder that could not index): one connection at a time, in write
  transactions of ``CATCH_UP_BATCH`` frames, calling ``progress`` with each batch's size.
- Plain SQL through the store's own transaction helper: sqlite-utils' FTS helpers index a
  table's columns all at once (our external content is a view, indexed a batch at a time)
  and balance quotes rather than taking them literally. Queries are built from this
  module's constant fragments; values are parameters.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2

from acp_proxy.errors import RecordingError
from acp_proxy.store.database import connect, write_transaction
from acp_proxy.store.frame_types import Layout, require_typed
from acp_proxy.store.readers import DIRECTIONS, open_for_reading
from acp_proxy.store.search_index import index_frames
from acp_proxy.store.snippet import json_snippet, phrase_pattern
from acp_proxy.store.values import MARK_END, MARK_START, Hit

CATCH_UP_BATCH = 5000
ELLIPSIS = "…"
SNIPPET_WORDS = 24
SNIPPET_CHARS = 160  # regular-expression snippets: characters of context around the match
REGEX_MEMORY = 64 << 20  # what RE2 may use to compile one pattern
# A word to the index: what FTS5's unicode61 tokenizer keeps (letters and digits).
_WORD = re.compile(r"[^\W_]", re.UNICODE)


class BadPattern(RecordingError):
    """A regular expression that does not compile."""


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """What to look for, and where."""

    pattern: str
    regex: bool = False
    ignore_case: bool = False  # regular expressions only: full text always ignores case
    connections: Sequence[int] | None = None  # None: every connection
    method: str | None = None  # a GLOB pattern
    direction: str | None = None  # c2a, a2c, stderr (or client, agent)
    since_ns: int | None = None  # frames recorded at or after this wall-clock time
    after: int = 0  # continue after this frame id
    limit: int | None = None


@dataclass(slots=True)
class IndexState:
    """How far the search index is behind the recordings."""

    pending: int  # frames not yet indexed
    connections: list[int] = field(default_factory=list)  # the connections they belong to


def fts_phrase(pattern: str) -> str | None:
    """The FTS5 query for ``pattern`` taken literally (None: it has no word to look for)."""
    if not _WORD.search(pattern):
        return None
    return '"' + pattern.replace('"', '""') + '" *'


def open_for_search(path: Path) -> tuple[sqlite3.Connection, bool]:
    """Open a database to search it: ``(db, True)`` writable (the index can catch up), else
    ``(db, False)`` read-only, when the file cannot be written but has an index to search."""
    try:
        return connect(path, create=False), True
    except RecordingError as error:
        db = open_for_reading(path)
        try:
            db.execute("SELECT 1 FROM search_progress LIMIT 1").fetchall()
        except sqlite3.Error:
            db.close()
            raise RecordingError(f"{error}; and it has no search index to read") from error
        return db, False


def index_state(db: sqlite3.Connection) -> IndexState:
    """The frames the index does not cover yet, per connection."""
    rows = db.execute(
        "SELECT c.id, coalesce(p.indexed_seq, 0) FROM connection c "
        "LEFT JOIN search_progress p ON p.connection_id = c.id ORDER BY c.id"
    ).fetchall()
    state = IndexState(0)
    for connection_id, indexed in rows:
        behind, mistyped = db.execute(
            "SELECT count(*), coalesce(sum(typeof(seq) != 'integer'), 0) FROM frame "
            "WHERE connection_id = ? AND seq > ?",
            (connection_id, indexed),
        ).fetchone()
        if mistyped:  # said before anything is said about indexing
            require_typed(db, connection_id, ["seq"])
        if behind:
            state.pending += int(behind)
            state.connections.append(int(connection_id))
    return state


def catch_up(
    db: sqlite3.Connection,
    state: IndexState | None = None,
    progress: Callable[[int], None] = lambda n: None,
) -> int:
    """Index every frame the index does not cover yet; returns how many were indexed."""
    state = state if state is not None else index_state(db)
    done = 0
    try:
        for connection_id in state.connections:
            while True:
                with write_transaction(db):
                    taken = index_frames(db, connection_id, CATCH_UP_BATCH)
                if not taken:
                    break
                done += taken
                progress(taken)
    except sqlite3.Error as error:
        raise RecordingError(f"cannot bring the search index up to date: {error}") from error
    return done


def _filters(query: SearchQuery) -> tuple[str, list[object]]:
    clauses = ["f.id > ?"]
    values: list[object] = [query.after]
    if query.connections is not None:
        marks = ", ".join("?" for _ in query.connections) or "NULL"
        clauses.append(f"f.connection_id IN ({marks})")
        values += list(query.connections)
    if query.method is not None:
        clauses.append("f.method GLOB ?")
        values.append(query.method)
    if query.direction is not None:
        clauses.append("f.direction = ?")
        values.append(DIRECTIONS.get(query.direction, query.direction))
    if query.since_ns is not None:
        clauses.append("f.wall_ns >= ?")
        values.append(query.since_ns)
    return " AND ".join(clauses), values


_HIT_COLUMNS = "f.id, f.connection_id, f.seq, f.direction, f.kind, f.method, f.wall_ns"
_HIT = ("id", "connection_id", "seq", "direction", "kind", "method", "wall_ns")
_HIT_SNIPPET = Layout((*_HIT, None, "raw"))  # the index's snippet or text, and the frame
_HIT_RAW = Layout((*_HIT, "raw"))


def _hit(row: tuple[Any, ...], snippet: str) -> Hit:
    return Hit(row[0], row[1], row[2], row[3], row[4], row[5], row[6], snippet)


def search(db: sqlite3.Connection, query: SearchQuery) -> Iterator[Hit]:
    """The frames that match, in the order they were recorded (streamed)."""
    if query.regex:
        yield from _regex_search(db, query)
        return
    phrase = fts_phrase(query.pattern)
    if phrase is None:
        yield from _substring_search(db, query)
        return
    where, values = _filters(query)
    words = phrase_pattern(query.pattern)
    statement = (
        f"SELECT {_HIT_COLUMNS}, snippet(frame_search, 0, ?, ?, ?, ?), f.raw "
        "FROM frame_search JOIN frame f ON f.id = frame_search.rowid "
        f"WHERE frame_search MATCH ? AND {where} ORDER BY frame_search.rowid LIMIT ?"
    )
    arguments = [MARK_START, MARK_END, ELLIPSIS, SNIPPET_WORDS, phrase, *values]
    arguments.append(-1 if query.limit is None else query.limit)
    try:
        cursor = db.execute(statement, arguments)
        while rows := cursor.fetchmany(64):
            for row in _HIT_SNIPPET.check(db, rows, None):
                from_json = json_snippet(bytes(row[8]), words) if words is not None else None
                yield _hit(row, from_json or row[7] or "")
    except sqlite3.Error as error:
        raise RecordingError(f"cannot search the recordings: {error}") from error


def _substring_search(db: sqlite3.Connection, query: SearchQuery) -> Iterator[Hit]:
    where, values = _filters(query)
    statement = (
        f"SELECT {_HIT_COLUMNS}, t.text, f.raw FROM frame f JOIN frame_text t ON t.id = f.id "
        f"WHERE {where} AND instr(t.text, ?) > 0 ORDER BY f.id LIMIT ?"
    )
    values += [query.pattern, -1 if query.limit is None else query.limit]
    literal = re.compile(re.escape(query.pattern))
    try:
        cursor = db.execute(statement, values)
        while rows := cursor.fetchmany(64):
            for row in _HIT_SNIPPET.check(db, rows, None):
                from_json = json_snippet(bytes(row[8]), literal, folded=False)
                match = None if from_json else literal.search(row[7])
                yield _hit(row, from_json or (_regex_snippet(row[7], match) if match else ""))
    except sqlite3.Error as error:
        raise RecordingError(f"cannot search the recordings: {error}") from error


def compile_pattern(query: SearchQuery) -> Any:
    """The RE2 pattern of a ``regex`` query (None for full text); checks it compiles."""
    if not query.regex:
        return None
    options = re2.Options()
    options.log_errors = False  # the reason comes back in the exception, said once by us
    options.case_sensitive = not query.ignore_case
    options.max_mem = REGEX_MEMORY
    try:
        return re2.compile(query.pattern.encode("utf-8"), options)
    except UnicodeEncodeError as error:
        raise BadPattern(f"bad regular expression {query.pattern!r}: not UTF-8") from error
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise BadPattern(
            f"bad regular expression {query.pattern!r}: {reason} (the syntax is RE2's: "
            "Python's without backreferences or lookaround)"
        ) from error


def _regex_search(db: sqlite3.Connection, query: SearchQuery) -> Iterator[Hit]:
    pattern = compile_pattern(query)
    assert pattern is not None

    def matches(raw: object) -> bool:  # a raw that is no blob comes back, to be refused
        return not isinstance(raw, bytes) or pattern.search(_line(raw)) is not None

    db.create_function("acp_proxy_matches", 1, matches, deterministic=True)
    where, values = _filters(query)
    statement = (
        f"SELECT {_HIT_COLUMNS}, f.raw FROM frame f "
        f"WHERE {where} AND acp_proxy_matches(f.raw) ORDER BY f.id LIMIT ?"
    )
    values.append(-1 if query.limit is None else query.limit)
    try:
        cursor = db.execute(statement, values)
        while rows := cursor.fetchmany(64):
            for row in _HIT_RAW.check(db, rows, None):
                line = _line(row[7])
                match = pattern.search(line)
                yield _hit(row, _byte_snippet(line, *match.span()) if match else "")
    except sqlite3.Error as error:
        raise RecordingError(f"cannot search the recordings: {error}") from error


def _line(raw: bytes) -> bytes:
    """A recorded line as a pattern sees it: its bytes without the newline (``$`` ends it)."""
    return raw[:-1] if raw.endswith(b"\n") else bytes(raw)


def _byte_snippet(line: bytes, start: int, end: int) -> str:
    """``_regex_snippet`` for a match at byte offsets (RE2's, at character boundaries)."""
    before = line[:start].decode("utf-8", "replace")
    found = line[start:end].decode("utf-8", "replace")
    return _span_snippet(before + found + line[end:].decode("utf-8", "replace"),
                         len(before), len(before) + len(found))  # fmt: skip


def _regex_snippet(text: str, match: Any) -> str:
    """The match between the marks, with up to ``SNIPPET_CHARS`` of context on each side."""
    return _span_snippet(text, *match.span())


def _span_snippet(text: str, start: int, end: int) -> str:
    end = max(end, start)
    before = text[max(0, start - SNIPPET_CHARS // 2) : start]
    after = text[end : end + SNIPPET_CHARS // 2]
    head = ELLIPSIS if start - len(before) > 0 else ""
    tail = ELLIPSIS if end + len(after) < len(text.rstrip("\r\n")) else ""
    return (
        f"{head}{before}{MARK_START}{text[start:end]}{MARK_END}{after.rstrip(chr(10) + chr(13))}"
        f"{tail}"
    )
