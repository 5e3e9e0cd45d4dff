"""Import checks every value against its column's type before it is written.

Rules:
- SQLite stores whatever it is given, so an export line saying ``"mono_ns": "soon"`` would be
  imported and crash every reader later. A value is refused unless it fits its column:
  INTEGER an integer SQLite can hold (64 bits; never a boolean or a float), TEXT a string,
  BLOB bytes, a column without a type (``rpc_id``) a string, an integer of 64 bits, a float or
  null. Null is refused where the column is NOT NULL.
- The connection's JSON columns must hold JSON: ``argv`` and ``client_argv`` a list of
  strings, ``client_info`` and ``agent_info`` any JSON value (or null).
- Column types come from the database's own schema (``PRAGMA table_info``), so a column added
  by a migration is checked without a change here.
- A frame's values must also mean something (``frame_problem``): a known ``direction`` and
  ``kind``, flags 0 or 1, ``seq`` from 1, ``offset`` and ``size`` never negative, ``size`` at
  least the bytes held (less only when the bytes are missing: ``length(raw) < size``), and
  ``raw`` one line: a newline only as its last byte.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.protocol.observer import STDERR_KIND

INT64 = (-(2**63), 2**63 - 1)
DIRECTIONS = frozenset(d.value for d in Direction)
KINDS = frozenset({*(k.value for k in Kind), STDERR_KIND})
FLAGS = ("bad_json", "bad_utf8", "not_jsonrpc", "batch", "no_newline")
JSON_COLUMNS = {"argv", "client_argv", "client_info", "agent_info"}


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    not_null: bool


def columns(db: sqlite3.Connection, table: str) -> dict[str, Column]:
    return {
        row[1]: Column(row[1], str(row[2]).upper(), bool(row[3]))
        for row in db.execute(f"PRAGMA table_info({table})")
    }


def _integer(value: Any) -> bool:
    return type(value) is int and INT64[0] <= value <= INT64[1]


def _fits(column: Column, value: Any) -> bool:
    if column.type == "INTEGER":
        return _integer(value)
    if column.type == "TEXT":
        return isinstance(value, str)
    if column.type == "BLOB":
        return isinstance(value, bytes)
    return isinstance(value, str | float) or _integer(value)


def _json_problem(name: str, text: str) -> str | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return f"{name} is not JSON text"
    if (
        name in ("argv", "client_argv")
        and value is not None
        and not (isinstance(value, list) and all(isinstance(a, str) for a in value))
    ):
        return f"{name} is not a JSON list of strings"
    return None


def problem(types: dict[str, Column], record: dict[str, Any]) -> str | None:
    """Why ``record`` (column name -> value) cannot be imported, or None when it can."""
    for name, value in record.items():
        column = types.get(name)
        if column is None:
            continue  # unknown columns are refused by the importer, by name
        if value is None:
            if column.not_null:
                return f"{name} is null"
            continue
        if not _fits(column, value):
            shown = orjson.dumps(value).decode()[:40] if not isinstance(value, bytes) else "bytes"
            return f"{name} is {shown}, not {_word(column)}"
        if name in JSON_COLUMNS and column.type == "TEXT":
            found = _json_problem(name, value)
            if found:
                return found
    return None


def _word(column: Column) -> str:
    return {
        "INTEGER": "an integer of 64 bits",
        "TEXT": "text",
        "BLOB": "bytes",
    }.get(column.type, "a string or a number")


def frame_problem(record: dict[str, Any]) -> str | None:
    """Why a frame whose values fit their columns (``problem``) still means nothing, or None."""
    if record.get("direction") not in DIRECTIONS:
        return f"direction is {_shown(record.get('direction'))}, not c2a, a2c or stderr"
    if record.get("kind") not in KINDS:
        return f"kind is {_shown(record.get('kind'))}, not a frame kind"
    for flag in FLAGS:
        if record.get(flag, 0) not in (0, 1) or isinstance(record.get(flag), bool):
            return f"{flag} is {_shown(record.get(flag))}, not 0 or 1"
    for name, least in (("seq", 1), ("offset", 0), ("size", 0)):
        value = record.get(name)
        if isinstance(value, int) and value < least:
            return f"{name} is {value}, less than {least}"
    raw = record.get("raw")
    if isinstance(raw, bytes):
        size = record.get("size")
        if isinstance(size, int) and size < len(raw):
            return f"size is {size}, less than the {len(raw)} bytes of raw"
        if b"\n" in raw[:-1]:
            return "raw holds more than one line (a newline before its end)"
    return None


def _shown(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()[:40]
    except TypeError:
        return type(value).__name__
