"""The store's ceiling: rows/s that ``RecordingWriter.append`` commits when nothing else runs.

    python -m tests.perf.bench_store [--rows 200000] [--batch 5000] [--repeat 3]

Rows are built before timing (186-byte ``session/update`` frames, as the recorder would make
them), then appended in batches into a fresh database with the real schema and indexes, one
transaction per batch, garbage collection off (as in the recorder process). This is the upper
bound of "frames committed per second" for small frames on this machine: the recorder also has
to frame and parse every line, and the peers and the proxy compete for the same cores.
For comparison it also times the same rows through a bare three-column table (id, seq, raw),
which is what SQLite costs without the parsed columns and indexes.
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import Frame
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter

FRAME = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    b'{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text",'
    b'"text":"tok %08d"}}}}\n'
)


def rows(count: int) -> list[FrameRecord]:
    observer = ConnectionObserver()
    offset = 0
    made = []
    for n in range(count):
        raw = FRAME % n
        made.append(observer.observe(Direction.AGENT_TO_CLIENT, Frame(raw, offset), n, n))
        offset += len(raw)
    return made


def store_rate(records: list[FrameRecord], batch: int, folder: Path) -> float:
    db = connect(folder / "store.sqlite", recorder=True)
    writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "bench", 1))
    start = time.perf_counter()
    for first in range(0, len(records), batch):
        writer.append(records[first : first + batch])
    elapsed = time.perf_counter() - start
    db.close()
    return len(records) / elapsed


def bare_rate(records: list[FrameRecord], batch: int, folder: Path) -> float:
    db = sqlite3.connect(folder / "bare.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE frame (id INTEGER PRIMARY KEY, seq INTEGER, raw BLOB)")
    pairs = [(record.seq, record.raw) for record in records]
    start = time.perf_counter()
    for first in range(0, len(pairs), batch):
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO frame (seq, raw) VALUES (?, ?)", pairs[first : first + batch])
        db.execute("COMMIT")
    elapsed = time.perf_counter() - start
    db.close()
    return len(pairs) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    gc.disable()
    records = rows(args.rows)
    store, bare = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="acp-bench-store-") as folder:
            store.append(store_rate(records, args.batch, Path(folder)))
            bare.append(bare_rate(records, args.batch, Path(folder)))
    print(f"store (frame table, 23 columns, 2 indexes): {statistics.median(store):,.0f} rows/s")
    print(f"bare (id, seq, raw):                        {statistics.median(bare):,.0f} rows/s")


if __name__ == "__main__":
    main()
