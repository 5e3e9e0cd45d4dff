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
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

INT64 = (-(2**63), 2**63 - 1)
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
