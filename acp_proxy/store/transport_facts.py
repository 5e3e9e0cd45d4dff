"""How a remote connection was carried: read for the check, exported, imported.

Rules:
- ``transport_facts`` gives a remote connection's exchanges and frame transports as
  protocol/transport.py values (None for stdio), through store/remote.py's readers; the
  answer's header values are left behind (readers judge by names).
- A damaged value (a header list that is not one) is read as absent, never raised.
- A JSONL export carries a remote connection's facts in its header (``"transport"``:
  exchanges as stored, header lists decoded, and ``[seq, exchange seq, stream]`` per frame);
  ``imported_transport`` checks every value's type before ``insert_transport`` writes it, so a
  crafted export is refused whole (docs/recording-format.md).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from acp_proxy.protocol.transport import Exchange, Transport
from acp_proxy.store.remote import exchanges, frame_transports
from acp_proxy.store.transport_kind import REMOTE, is_remote, transport_of


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


# --------------------------------------------------------------------------- export, import

EXCHANGE_FIELDS = {
    "seq": int, "method": str, "target": str, "http_version": str, "stream": str,
    "acp_connection_id": str, "acp_session_id": str, "status": int, "request_headers": list,
    "response_headers": list, "body": str, "started_ns": int, "answered_ns": int,
    "ended_ns": int, "error": str,
}  # fmt: skip
REQUIRED = ("seq", "method", "target", "stream", "started_ns")
INT64 = (-(2**63), 2**63 - 1)


class TransportRefused(ValueError):
    """An export's transport facts that do not fit the tables (the import is refused)."""


def exported_transport(db: sqlite3.Connection, connection_id: int) -> dict[str, Any] | None:
    """A remote connection's transport facts for its JSONL export header (None for stdio):
    ``{"exchanges": [row, ...], "frames": [[seq, exchange seq, stream], ...]}``."""
    if not is_remote(db, connection_id):
        return None
    frames = frame_transports(db, connection_id)
    return {
        "exchanges": exchanges(db, connection_id),
        "frames": [[seq, *frames[seq]] for seq in sorted(frames)],
    }


def _fits(kind: type, value: Any) -> bool:
    if kind is int:
        return type(value) is int and INT64[0] <= value <= INT64[1]
    if kind is list:
        return isinstance(value, list) and all(
            isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
            and (pair[1] is None or isinstance(pair[1], str)) for pair in value
        )  # fmt: skip
    return isinstance(value, kind)


def _exchange_row(number: int, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TransportRefused(f"exchange {number} is not an object")
    unknown = set(value) - set(EXCHANGE_FIELDS)
    if unknown:
        raise TransportRefused(f"exchange {number}: unknown fields {sorted(unknown)}")
    for name in REQUIRED:
        if value.get(name) is None:
            raise TransportRefused(f"exchange {number}: {name} is missing")
    for name, found in value.items():
        if found is not None and not _fits(EXCHANGE_FIELDS[name], found):
            raise TransportRefused(f"exchange {number}: {name} has the wrong type")
    return value


def imported_transport(value: Any) -> tuple[list[dict[str, Any]], list[tuple[int, int, str]]]:
    """An export header's ``transport``, every value's type checked (``TransportRefused``)."""
    if not isinstance(value, dict) or set(value) - {"exchanges", "frames"}:
        raise TransportRefused('"transport" must be {"exchanges": [...], "frames": [...]}')
    rows = value.get("exchanges") or []
    frames = value.get("frames") or []
    if not isinstance(rows, list) or not isinstance(frames, list):
        raise TransportRefused('"transport" must be {"exchanges": [...], "frames": [...]}')
    checked = [_exchange_row(number, row) for number, row in enumerate(rows, start=1)]
    carried: list[tuple[int, int, str]] = []
    for entry in frames:
        if not (isinstance(entry, list) and len(entry) == 3 and _fits(int, entry[0])
                and _fits(int, entry[1]) and isinstance(entry[2], str)):  # fmt: skip
            raise TransportRefused(f"a frame's transport {entry!r:.60} is not [seq, exchange, "
                                   "stream]")  # fmt: skip
        carried.append((entry[0], entry[1], entry[2]))
    return checked, carried


def insert_transport(
    db: sqlite3.Connection, connection_id: int, rows: list[dict[str, Any]],
    frames: list[tuple[int, int, str]],
) -> None:  # fmt: skip
    """Write imported transport facts (inside the caller's transaction)."""
    for row in rows:
        names = list(row)
        values = [
            orjson.dumps(row[n]).decode() if n in ("request_headers", "response_headers")
            and row[n] is not None else row[n]
            for n in names
        ]  # fmt: skip
        db.execute(
            f"INSERT INTO http_exchange (connection_id, {', '.join(names)}) "
            f"VALUES (?, {', '.join('?' for _ in names)})",
            (connection_id, *values),
        )
    db.executemany(
        "INSERT INTO frame_transport (connection_id, seq, exchange_seq, stream) "
        "VALUES (?, ?, ?, ?)",
        [(connection_id, *entry) for entry in frames],
    )
