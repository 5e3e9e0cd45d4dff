"""Eight proxies record into one database at once while CPU-bound processes hog both cores:
every recording completes, whole and exact (a bounded soak; tests/perf/soak_recorders.py runs
the long one)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.perf.soak_recorders import HOG
from tests.support.proxy import proxy_argv

PROXIES = 8
FRAMES_OUT = 7_000
FRAMES_IN = 500
HOGS = 3
HOG_SECONDS = 6.0
GROUP, PAUSE_MS = 20, 10  # the agents talk for about 4 s: many small batches to commit
AGENT = ("drip", str(FRAMES_OUT), str(GROUP), str(PAUSE_MS))

pytestmark = pytest.mark.slow  # still run by .ci/run, which selects every test


def test_eight_proxies_under_cpu_load_all_record_everything(db_path: Path) -> None:
    out = [b'{"jsonrpc":"2.0","method":"_drip","params":{"n":%d}}\n' % n for n in range(FRAMES_OUT)]
    hogs = [subprocess.Popen([sys.executable, "-c", HOG, str(HOG_SECONDS)]) for _ in range(HOGS)]
    try:
        proxies = [
            subprocess.Popen(
                proxy_argv(db_path, *AGENT, extra=("--label", f"p{n}", "--grace", "60")),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for n in range(PROXIES)
        ]
        sent = b"".join(b'{"jsonrpc":"2.0","method":"_in","params":{"n":%d}}\n' % n
                        for n in range(FRAMES_IN))  # fmt: skip
        results = [p.communicate(sent, timeout=55) for p in proxies]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    said = b"".join(err for _, err in results).decode()
    assert [p.returncode for p in proxies] == [0] * PROXIES, said
    assert all(stdout == b"".join(out) for stdout, _ in results)
    assert "nothing more will be recorded" not in said
    assert "incomplete" not in said
    # A proxy that met its flush deadline leaves its recorder finishing in the background.
    deadline = time.monotonic() + 30
    while True:
        con = sqlite3.connect(db_path)
        rows = con.execute(
            "SELECT label, status, frames_c2a, frames_a2c, frames_lost, bytes_lost, "
            "(SELECT count(*) FROM frame f WHERE f.connection_id = c.id) "
            "FROM connection c ORDER BY label"
        ).fetchall()
        con.close()
        if all(r[1] != "running" for r in rows) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    expected = FRAMES_IN + FRAMES_OUT
    assert rows == [
        (f"p{n}", "exited", FRAMES_IN, FRAMES_OUT, 0, 0, expected) for n in range(PROXIES)
    ], said
