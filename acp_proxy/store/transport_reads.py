"""How a remote connection was carried, read for the check and the other readers.

Rules:
- ``transport_of(db, connection_id)`` is the connection's ``transport`` column: ``stdio`` for
  a recording of an older format (read without migrating) or one the proxy does not know.
- ``transport_facts`` gives a remote connection's exchanges and frame transports as
  protocol/transport.py values (None for stdio), through store/remote.py's readers; the
  answer's header values are left behind (readers judge by names).
- A damaged value (a header list that is not one) is read as absent, never raised.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from acp_proxy.protocol.transport import Exchange, Transport
from acp_proxy.store.remote import exchanges, frame_transports

REMOTE = ("http", "websocket")


def transport_of(db: sqlite3.Connection, connection_id: int) -> str:
    try:
        row = db.execute("SELECT transport FROM connection WHERE id = ?", (connection_id,))
        found = row.fetchone()
    except sqlite3.OperationalError:  # an older format, read without migrating
        return "stdio"
    value = found[0] if found else None
    return value if isinstance(value, str) else "stdio"


def _names(headers: Any) -> frozenset[str]:
    if not isinstance(headers, list):
        return frozenset()
    return frozenset(
        pair[0].lower() for pair in headers
        if isinstance(pair, list) and pair and isinstance(pair[0], str)
    )  # fmt: skip


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def transport_facts(db: sqlite3.Connection, connection_id: int) -> Transport | None:
    kind = transport_of(db, connection_id)
    if kind not in REMOTE:
        return None
    rows = exchanges(db, connection_id)
    found = {
        row["seq"]: Exchange(
            row["seq"], _text(row["method"]), _text(row["stream"]),
            row["status"] if isinstance(row["status"], int) else None,
            _text(row["acp_session_id"]), _names(row["response_headers"]),
        )
        for row in rows if isinstance(row["seq"], int)
    }  # fmt: skip
    return Transport(kind, found, frame_transports(db, connection_id))
