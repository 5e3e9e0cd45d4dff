"""Test helpers: building frames and recordings without a process."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter

C2A, A2C, ERR = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT, Direction.AGENT_STDERR


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def observe_all(
    exchange: Iterable[tuple[Direction, bytes]], step_ns: int = 1_000_000
) -> tuple[ConnectionObserver, list[FrameRecord]]:
    """Feed (direction, bytes) pairs through splitters and an observer, 1 ms apart."""
    observer = ConnectionObserver()
    splitters = {d: LineSplitter() for d in Direction}
    records = []
    clock = 0
    for direction, data in exchange:
        clock += step_ns
        for frame in splitters[direction].feed(data):
            records.append(observer.observe(direction, frame, clock, clock + 10**18))
    return observer, records


def write_recording(
    db_path: Path, exchange: Iterable[tuple[Direction, bytes]], label: str | None = None
) -> int:
    observer, records = observe_all(exchange)
    db = connect(db_path)
    writer = RecordingWriter.start(
        db, NewConnection(["agent"], "/", "test", 1, label=label, started_ns=10**18)
    )
    writer.append(records, facts=observer.facts())
    writer.done()  # written whole: not live (a row of a live writer cannot be deleted)
    db.close()
    return writer.connection_id


def tamper_frame(db_path: Path, seq: int, column: str, value: str) -> None:
    """Change one column of the frame at ``seq`` to the SQL expression ``value``, as someone
    with sqlite3 might (``NULL``: the table's NOT NULL constraints are dropped first)."""
    db = sqlite3.connect(db_path)
    if value == "NULL":
        db.execute("PRAGMA writable_schema = ON")
        db.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name = 'frame'"
        )
        db.commit()
        db.close()
        db = sqlite3.connect(db_path)
    db.execute(f"UPDATE frame SET {column} = {value} WHERE seq = ?", (seq,))
    db.commit()
    db.close()
