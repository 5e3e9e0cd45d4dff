"""Remote traffic's transport facts: HTTP exchanges and which stream each frame crossed on.

Rules:
- Format 8 (database.py): ``http_exchange`` has one row per HTTP request of a remote connection
  (a WebSocket upgrade is one exchange for the whole socket), numbered ``seq`` 1, 2 ... per
  connection in the order the requests arrived; ``frame_transport`` has one row per frame of a
  remote connection: the exchange it crossed in and its stream (``STREAMS``). Frames are in
  ``frame`` exactly as for stdio.
- ``RemoteFactsWriter.write`` takes what a batch of exchanges learnt (new rows, then columns
  set on them as the answer and the end come) and the frames' transport rows, and writes them
  in one transaction of their own, after the frames' own (a reader may see a frame a moment
  before its transport row, never the other way round).
- ``carriers`` is the one answer to "how did these frames cross": ``readers.frames`` (so
  ``show`` and ``tail``) and the inspector's detail ask it.
- Header lists are JSON arrays of ``[name, value]`` pairs as they crossed (names lower-cased);
  a credential header's value is ``null`` unless the proxy was asked to keep credentials (it
  decides; this module stores what it is given).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from acp_proxy.store.database import error_for, write_transaction
from acp_proxy.store.values import Carrier

# Which stream a frame crossed on: a POST's body (client to agent), a POST's answer body (the
# initialize result), the connection-scoped or a session-scoped SSE stream (a GET), a WebSocket.
STREAMS = ("post", "post_answer", "connection_sse", "session_sse", "websocket")
# What an exchange is: see docs/recording-format.md.
EXCHANGE_STREAMS = ("post", "connection_sse", "session_sse", "delete", "websocket", "other")

EXCHANGE_COLUMNS = (
    "seq", "method", "target", "http_version", "stream", "acp_connection_id", "acp_session_id",
    "status", "request_headers", "response_headers", "body", "started_ns", "answered_ns",
    "ended_ns", "error",
)  # fmt: skip
_SETTABLE = frozenset(EXCHANGE_COLUMNS) - {"seq"}
_JSON_COLUMNS = frozenset({"request_headers", "response_headers"})

REMOTE_FORMAT = 8  # the first format with these tables
# (connection id, frame seq, exchange seq, stream)
TransportRow = tuple[int, int, int, str]


def _value(column: str, value: Any) -> Any:
    if column in _JSON_COLUMNS and value is not None:
        return orjson.dumps(value).decode()
    return value


class RemoteFactsWriter:
    """Writes exchanges and frame transport rows; used from one thread."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = self.db = db

    def checkpoint(self) -> None:
        """Copy what the WAL holds into the main file, without waiting for anyone."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as error:
            raise error_for(error, "checkpoint the recording") from error

    def write(
        self,
        new_exchanges: Sequence[tuple[int, dict[str, Any]]],
        exchange_updates: Sequence[tuple[int, int, dict[str, Any]]],
        transports: Sequence[TransportRow],
    ) -> None:
        """``new_exchanges``: (connection id, columns incl. ``seq``); ``exchange_updates``:
        (connection id, exchange seq, columns); ``transports``: frame rows. One transaction.

        Raises ``RecordingBusy`` when the write lock could not be had (nothing written).
        """
        if not (new_exchanges or exchange_updates or transports):
            return
        try:
            with write_transaction(self._db):
                for connection_id, columns in new_exchanges:
                    names = [c for c in EXCHANGE_COLUMNS if c in columns]
                    self._db.execute(
                        f"INSERT INTO http_exchange (connection_id, {', '.join(names)}) "
                        f"VALUES (?, {', '.join('?' for _ in names)})",
                        (connection_id, *(_value(c, columns[c]) for c in names)),
                    )
                for connection_id, seq, columns in exchange_updates:
                    names = [c for c in columns if c in _SETTABLE]
                    if not names:
                        continue
                    self._db.execute(
                        f"UPDATE http_exchange SET {', '.join(f'{c} = ?' for c in names)} "
                        "WHERE connection_id = ? AND seq = ?",
                        (*(_value(c, columns[c]) for c in names), connection_id, seq),
                    )
                if transports:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO frame_transport "
                        "(connection_id, seq, exchange_seq, stream) VALUES (?, ?, ?, ?)",
                        transports,
                    )
        except sqlite3.Error as error:
            raise error_for(error, "write the transport facts") from error


def exchanges(db: sqlite3.Connection, connection_id: int) -> list[dict[str, Any]]:
    """The exchanges of one connection in ``seq`` order, header lists decoded."""
    cursor = db.execute(
        f"SELECT {', '.join(EXCHANGE_COLUMNS)} FROM http_exchange WHERE connection_id = ? "
        "ORDER BY seq",
        (connection_id,),
    )
    rows = []
    for values in cursor:
        row = dict(zip(EXCHANGE_COLUMNS, values, strict=True))
        for column in _JSON_COLUMNS:
            if row[column] is not None:
                row[column] = orjson.loads(row[column])
        rows.append(row)
    return rows


def frame_transports(db: sqlite3.Connection, connection_id: int) -> dict[int, tuple[int, str]]:
    """Frame seq -> (exchange seq, stream) for one connection (empty for stdio)."""
    cursor = db.execute(
        "SELECT seq, exchange_seq, stream FROM frame_transport WHERE connection_id = ?",
        (connection_id,),
    )
    return {seq: (exchange_seq, stream) for seq, exchange_seq, stream in cursor}


def carriers(
    db: sqlite3.Connection, connection_id: int, first_seq: int, last_seq: int
) -> dict[int, Carrier]:
    """Frame seq -> how it crossed, for the frames ``first_seq`` to ``last_seq`` (inclusive)
    of one connection that have a transport row (none for stdio, nor before format 8)."""
    if db.execute("PRAGMA user_version").fetchone()[0] < REMOTE_FORMAT:
        return {}
    cursor = db.execute(
        "SELECT t.seq, t.stream, t.exchange_seq, e.method, e.status FROM frame_transport t "
        "LEFT JOIN http_exchange e ON e.connection_id = t.connection_id AND e.seq = "
        "t.exchange_seq WHERE t.connection_id = ? AND t.seq BETWEEN ? AND ?",
        (connection_id, first_seq, last_seq),
    )
    return {seq: Carrier(stream, exchange, method, status) for seq, stream, exchange, method,
            status in cursor}  # fmt: skip
