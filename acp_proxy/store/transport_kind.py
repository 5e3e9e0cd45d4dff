"""How a connection was carried: the one answer to "is this a remote recording".

Rules:
- ``transport_of(db, connection_id)`` is the connection's ``transport`` column: ``stdio`` for
  a recording of an older format (read without migrating), or for a value the proxy does not
  know; ``REMOTE`` names the remote transports, and ``is_remote`` asks whether the connection
  was carried by one of them.
- Imports nothing of the project: replay asks it before its first answer.
"""

from __future__ import annotations

import sqlite3

REMOTE = ("http", "websocket")


def transport_of(db: sqlite3.Connection, connection_id: int) -> str:
    try:
        row = db.execute("SELECT transport FROM connection WHERE id = ?", (connection_id,))
        found = row.fetchone()
    except sqlite3.OperationalError:  # an older format, read without migrating
        return "stdio"
    value = found[0] if found else None
    return value if isinstance(value, str) else "stdio"


def is_remote(db: sqlite3.Connection, connection_id: int) -> bool:
    """Whether connection ``connection_id`` was carried remotely (HTTP or WebSocket)."""
    return transport_of(db, connection_id) in REMOTE
