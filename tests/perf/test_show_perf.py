"""Benchmark: ``acp-proxy show`` streams the first page of a one-million-frame recording fast.

Not part of the normal test run (pyproject ignores tests/perf). Run it with

    .venv/bin/pytest tests/perf -s -p no:cacheprovider

It builds a 1,000,000-frame connection (the v1 fixture conversation repeated, with seq, clocks
and request_seq shifted, written by SQL in one statement), then measures the time from starting
``acp-proxy show`` to reading its first page (``PAGE`` lines) from its stdout: the whole
command, interpreter start-up included, and the same work in-process. Budget: 200 ms.
"""

from __future__ import annotations

import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_proxy.inspect.render.text import frame_line
from acp_proxy.store import readers as store_read
from acp_proxy.store.refs import resolve_ref
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording

FRAMES = 1_000_000
PAGE = 50
BUDGET_MS = 200.0
RUNS = 7


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("perf") / "big.sqlite"
    write_recording(path, V1_CONVERSATION, label="template")
    per = len(V1_CONVERSATION)
    copies = FRAMES // per
    db = sqlite3.connect(path)
    columns = [r[1] for r in db.execute("PRAGMA table_info(frame)")][2:]  # no id, connection_id
    shifted = {
        "seq": f"t.seq + n.i * {per}",
        "mono_ns": f"t.mono_ns + n.i * {per * 1_000_000}",
        "wall_ns": f"t.wall_ns + n.i * {per * 1_000_000}",
        "request_seq": f"t.request_seq + n.i * {per}",
    }
    select = ", ".join(shifted.get(c, f"t.{c}") for c in columns)
    db.execute(
        "INSERT INTO connection (uid, label, status, started_ns, argv, cwd, proxy_version, "
        "proxy_pid, protocol_version) VALUES ('big', 'big', 'exited', 0, '[]', '/', 't', 1, 1)"
    )
    db.execute(
        f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {copies - 1}) "
        f"INSERT INTO frame (connection_id, {', '.join(columns)}) "
        f"SELECT 2, {select} FROM n, frame t WHERE t.connection_id = 1"
    )
    db.commit()
    assert (
        db.execute("SELECT count(*) FROM frame WHERE connection_id = 2").fetchone()[0]
        == per * copies
    )
    db.close()
    return path


def first_page_via_cli(db: Path) -> float:
    start = time.perf_counter()
    argv = [sys.executable, "-m", "acp_proxy", "show", "big", "--db", str(db)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE) as show:
        assert show.stdout is not None
        lines = [show.stdout.readline() for _ in range(PAGE)]
        elapsed = (time.perf_counter() - start) * 1000
        show.kill()
    assert all(lines)
    return elapsed


def first_page_in_process(db_path: Path) -> float:
    start = time.perf_counter()
    db = store_read.open_for_reading(db_path)
    connection_id = resolve_ref(db, "big")
    first = store_read.first_mono_ns(db, connection_id)
    lines = [frame_line(f, first) for f in store_read.frames(db, connection_id, limit=PAGE)]
    elapsed = (time.perf_counter() - start) * 1000
    db.close()
    assert len(lines) == PAGE
    return elapsed


def test_show_streams_the_first_page_of_a_million_frames(big_db: Path) -> None:
    first_page_via_cli(big_db)  # warm the page cache
    cli = statistics.median(first_page_via_cli(big_db) for _ in range(RUNS))
    inner = statistics.median(first_page_in_process(big_db) for _ in range(RUNS))
    print(
        f"\nshow, first {PAGE} lines of {FRAMES:,} frames: {cli:.1f} ms for the whole command "
        f"(interpreter start included), {inner:.1f} ms in-process (median of {RUNS})"
    )
    assert cli < BUDGET_MS
