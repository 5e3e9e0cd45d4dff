"""Benchmark: ``acp-proxy check`` on a 100,000-frame recording must take under 5 s.

Not part of the normal run (pytest's addopts ignore tests/perf). Run it with:

    .venv/bin/pytest tests/perf -p no:cacheprovider -s

The recording (tests/perf/busy_recording.py) is a v2 conversation shaped like a busy agent:
many prompt turns, each with a user message, running/idle states, tool calls with content
chunks, plans and long runs of agent message chunks (the kind that dominates real recordings),
all schema-validated.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main
from tests.perf.busy_recording import FRAMES, build

BUDGET_S = 5.0
SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "acp-schema"


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
