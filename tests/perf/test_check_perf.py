"""Benchmark: ``acp-proxy check`` on a 100,000-frame recording must take under 5 s.

Not part of the normal run (pytest's addopts ignore tests/perf). Run it with:

    .venv/bin/pytest tests/perf -p no:cacheprovider -s

The recording is a v2 conversation shaped like a busy agent: many prompt turns, each with a
user message, running/idle states, tool calls with content chunks, plans and long runs of
agent message chunks (the kind that dominates real recordings), all schema-validated.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import LineSplitter
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_checks import turn, v2
from tests.support.helpers import A2C, C2A

FRAMES = 100_000
BUDGET_S = 5.0
SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "acp-schema"


def build(path: Path, make_turn: Callable[[int], list[Any]] = turn) -> int:
    observer, splitters = ConnectionObserver(), {C2A: LineSplitter(), A2C: LineSplitter()}
    db = connect(path)
    writer = RecordingWriter.start(db, NewConnection(["bench"], "/", "bench", 1, label="bench"))
    batch, n, count = [], 0, 0
    frames = v2()
    while count < FRAMES or frames:  # whole turns only
        if not frames:
            frames, n = make_turn(n), n + 1
        direction, data = frames.pop(0)
        for frame in splitters[direction].feed(data):
            count += 1
            batch.append(observer.observe(direction, frame, count, count))
        if len(batch) >= 5000:
            writer.append(batch, facts=observer.facts())
            batch = []
    writer.append(batch, facts=observer.facts())
    db.close()
    return count


@pytest.mark.skipif(not SCHEMAS.is_dir(), reason="../shared/acp-schema missing")
def test_check_100k_frames_under_5s(tmp_path: Path) -> None:
    db = tmp_path / "bench.sqlite"
    frames = build(db)
    assert frames >= FRAMES
    env = {"ACP_PROXY_SCHEMAS": os.environ.get("ACP_PROXY_SCHEMAS", str(SCHEMAS))}
    start = time.perf_counter()
    result = CliRunner().invoke(main, ["check", "--db", str(db), "bench"], env=env)
    elapsed = time.perf_counter() - start
    print(f"\ncheck of {frames} frames: {elapsed:.2f} s; {result.output.strip()}")
    assert result.exit_code == 0, result.output
    assert elapsed < BUDGET_S
