"""Upkeep of the full-text search index (format 5): adding a connection's next frames to it.

Rules:
- ``frame_search`` is an FTS5 index over the ``frame_text`` view, its external content
  (schema.py says what the view holds); ``search_progress`` says, per connection, up to which
  ``seq`` frames are indexed. Frames are indexed in ``seq`` order, each once.
- Indexing runs inside the caller's write transaction, so the progress it reads and moves is
  the one every other writer sees: the writer (writer.py) and ``search``'s catch-up
  (search.py) share it.
"""

from __future__ import annotations

import sqlite3

from acp_proxy.store.frame_types import JOINED, Layout

_LAST_SEQ = Layout(("seq" + JOINED, None))  # max(seq): NULL when nothing is left, and a count


def index_frames(db: sqlite3.Connection, connection_id: int, limit: int | None = None) -> int:
    """Add to the search index the next frames of a connection (at most ``limit``).

    Runs inside the caller's transaction, which must be a write transaction: the progress it
    reads and moves is then the one every other writer sees. Returns how many frames it took.
    """
    row = db.execute(
        "SELECT indexed_seq FROM search_progress WHERE connection_id = ?", (connection_id,)
    ).fetchone()
    after = 0 if row is None else int(row[0])
    last = db.execute(
        "SELECT max(seq), count(*) FROM (SELECT seq FROM frame WHERE connection_id = ? "
        "AND seq > ? ORDER BY seq LIMIT ?)",
        (connection_id, after, -1 if limit is None else limit),
    ).fetchone()
    _LAST_SEQ.check_one(db, last, connection_id)  # a hand-made seq is never indexed
    if last[0] is None:
        return 0
    db.execute(
        "INSERT INTO frame_search (rowid, text) SELECT id, text FROM frame_text "
        "WHERE connection_id = ? AND seq > ? AND seq <= ?",
        (connection_id, after, last[0]),
    )
    db.execute(
        "INSERT INTO search_progress (connection_id, indexed_seq) VALUES (?, ?) "
        "ON CONFLICT (connection_id) DO UPDATE SET indexed_seq = excluded.indexed_seq",
        (connection_id, last[0]),
    )
    return int(last[1])
