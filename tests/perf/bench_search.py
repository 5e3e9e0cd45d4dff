"""Full-text search at scale: indexing rate, search time, and what indexing costs the writer.

    python -m tests.perf.bench_search [--frames 1000000] [--connections 100] [--repeat 5]
                                      [--dir DIR]

Builds, before timing, ``--frames`` frames spread over ``--connections`` connections: mostly
``agent_message_chunk`` updates of 8 to 20 words drawn from a 5,000-word vocabulary (a seeded
random generator, so every run builds the same text), one frame in a thousand saying
"permission denied for /etc/shadow", and one frame in the whole database holding the word
"zyzzogeton". Then, garbage collection off (as in the recorder process):

1. writes them through ``RecordingWriter.append`` in batches of 5,000, once without the index
   (``index=False``) and once with it (as the recorder does): rows/s each and the ratio;
2. indexes the first database from scratch with ``search.catch_up`` (what ``search`` does on
   first use of an older database): frames/s and MB/s of frame bytes;
3. times queries (median of ``--repeat``), through ``store.search.search``: a word found once,
   a phrase found in 0.1% of frames (all hits), a common word (the first 20 hits, as
   ``search -n 20``, and all of them), the same restricted to one connection, a prefix, a
   regular expression that scans every frame, and ``index_state`` (run before every search);
4. prints the database sizes with and without the index.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import orjson

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import Frame
from acp_proxy.store.database import connect
from acp_proxy.store.search import SearchQuery, catch_up, index_state, search
from acp_proxy.store.writer import NewConnection, RecordingWriter

BATCH = 5000
RARE = "zyzzogeton"
PHRASE = "permission denied for /etc/shadow"


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)]


def connection_frames(
    rng: random.Random, words: list[str], count: int, rare_at: int | None
) -> list[FrameRecord]:
    observer = ConnectionObserver()
    offset, made = 0, []
    for n in range(count):
        if n == rare_at:
            text = f"the {RARE} appears exactly once"
        elif rng.random() < 0.001:
            text = PHRASE
        else:
            text = " ".join(rng.choices(words, k=rng.randint(8, 20)))
        message = {"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
            "messageId": "m1", "content": {"type": "text", "text": text}}}}  # fmt: skip
        raw = orjson.dumps(message) + b"\n"
        made.append(observer.observe(Direction.AGENT_TO_CLIENT, Frame(raw, offset), n, n))
        offset += len(raw)
    return made


def write(path: Path, recordings: list[list[FrameRecord]], *, index: bool) -> float:
    db = connect(path, recorder=True)
    start = time.perf_counter()
    total = 0
    for records in recordings:
        writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "bench", 1), index=index)
        for first in range(0, len(records), BATCH):
            writer.append(records[first : first + BATCH])
        total += len(records)
    elapsed = time.perf_counter() - start
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return total / elapsed


def _all(db: object, query: SearchQuery) -> list[object]:
    return list(search(db, query))  # type: ignore[arg-type]


def timed(work: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    options = parser.parse_args()
    gc.disable()
    rng = random.Random(16)
    words = vocabulary(rng)
    per = options.frames // options.connections
    rare_connection = options.connections // 2
    recordings = [
        connection_frames(rng, words, per, per // 3 if c == rare_connection else None)
        for c in range(options.connections)
    ]
    frames = per * options.connections
    frame_bytes = sum(len(r.raw) for records in recordings for r in records)
    print(f"{frames:,} frames ({frame_bytes / 1e6:.0f} MB) in {options.connections} connections")
    with tempfile.TemporaryDirectory(dir=options.dir) as scratch:
        folder = Path(scratch)
        plain, indexed = folder / "plain.sqlite", folder / "indexed.sqlite"
        without = write(plain, recordings, index=False)
        with_index = write(indexed, recordings, index=True)
        print(f"writer without the index: {without:,.0f} rows/s")
        print(f"writer keeping the index: {with_index:,.0f} rows/s "
              f"({with_index / without:.2f}x)")  # fmt: skip
        plain_size = plain.stat().st_size
        db = connect(plain)
        start = time.perf_counter()
        done = catch_up(db)
        elapsed = time.perf_counter() - start
        assert done == frames, (done, frames)
        print(f"catch-up indexing: {done / elapsed:,.0f} frames/s, "
              f"{frame_bytes / elapsed / 1e6:.1f} MB/s of frames ({elapsed:.1f} s)")  # fmt: skip
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        print(f"database: {plain_size / 1e6:.0f} MB without the index, "
              f"{plain.stat().st_size / 1e6:.0f} MB with it")  # fmt: skip
        one = [rare_connection + 1]
        queries: list[tuple[str, SearchQuery]] = [
            (f"one word, 1 hit ({RARE})", SearchQuery(RARE)),
            ("a phrase in 0.1% of frames, all hits", SearchQuery(PHRASE)),
            (f"a common word ({words[0]}), first 20 hits", SearchQuery(words[0], limit=20)),
            (f"a common word ({words[0]}), all hits", SearchQuery(words[0])),
            ("a common word in one connection, all hits",
             SearchQuery(words[0], connections=one)),
            (f"a prefix ({words[1][:3]}), first 20 hits", SearchQuery(words[1][:3], limit=20)),
            (f"--regex {RARE}[a-z]*, scanning every frame", SearchQuery(RARE + "[a-z]*",
                                                                       regex=True)),
        ]  # fmt: skip
        for name, query in queries:
            seconds, hits = timed(partial(_all, db, query), options.repeat)
            assert isinstance(hits, list)
            print(f"search {name}: {seconds * 1000:,.1f} ms, {len(hits):,} hits")
        seconds, _ = timed(lambda: index_state(db), options.repeat)
        print(f"index_state (before every search): {seconds * 1000:,.1f} ms")
        db.close()


if __name__ == "__main__":
    main()
