"""The benchmark's ablation wrappers (tests/perf/variants.py, idle_spinner.py) do what they say.

docs/performance.md rests its 4 KB analysis on them: each variant must still forward every
byte intact, and switch off exactly its piece of recording.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.perf import client
from tests.support.processes import run_to_end

AGENT = [sys.executable, str(Path(__file__).parent / "perf" / "agent.py")]
FRAMES = 2000  # 4 KB each: 8 MB, more than the recorder's in-memory queue holds


def _frames_recorded(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        count: int = connection.execute("SELECT count(*) FROM frame").fetchone()[0]
    return count


@pytest.mark.parametrize(
    ("variant", "records_the_stream"),
    [("as-built", True), ("no-tap", False), ("drop", False), ("memory", True),
     ("no-pause-work", True)],
)  # fmt: skip
def test_each_variant_forwards_every_byte_and_records_as_it_says(
    tmp_path: Path, variant: str, records_the_stream: bool
) -> None:
    db, report = tmp_path / "r.sqlite", tmp_path / "cpu.jsonl"
    command = [sys.executable, "-m", "tests.perf.variants", variant, "--cpu-report", str(report),
               "record", "--db", str(db), "--", *AGENT]  # fmt: skip
    result = client.run_stream(command, "medium", FRAMES, timeout=60)
    assert result.ok, result.error
    recorded = _frames_recorded(db)
    if records_the_stream:
        assert recorded >= FRAMES  # the stream, the handshake and the prompt's answer
    else:
        assert recorded < FRAMES
    reader = json.loads(report.read_text().splitlines()[-1])
    assert reader["reader_cpu_s"] > 0
    # The reader saw the stream unless the tap was never written.
    assert (reader["bytes"] >= FRAMES * 4096) is (variant != "no-tap")


def test_an_unknown_variant_is_a_usage_error() -> None:
    done = run_to_end(
        [sys.executable, "-m", "tests.perf.variants", "fast", "record", "--", *AGENT], timeout=30
    )
    assert done.returncode == 2
    assert "usage:" in done.stderr


@pytest.mark.parametrize("scheduling_class", ["idle", "normal"])
def test_the_spinner_runs_the_command_beside_it(
    scheduling_class: str,
) -> None:
    command = [sys.executable, "-m", "tests.perf.idle_spinner", "--class", scheduling_class,
               "--", *AGENT]  # fmt: skip
    result = client.run_stream(command, "small", 1000, timeout=60)
    assert result.ok, result.error


@pytest.mark.parametrize(("variant", "indexes"), [("as-built", True), ("no-index", False)])
def test_no_index_records_everything_and_indexes_nothing(
    tmp_path: Path, variant: str, indexes: bool
) -> None:
    import time

    db = tmp_path / "r.sqlite"
    command = [sys.executable, "-m", "tests.perf.variants", variant, "record", "--db", str(db),
               "--", *AGENT]  # fmt: skip
    result = client.run_stream(command, "small", FRAMES, timeout=60)
    assert result.ok, result.error
    recorded = _frames_recorded(db)
    assert recorded >= FRAMES
    query = "SELECT coalesce(max(indexed_seq), 0) FROM search_progress"
    deadline = time.monotonic() + 30
    while True:  # the recorder indexes after the proxy has exited: poll
        with sqlite3.connect(db) as connection:
            indexed = connection.execute(query).fetchone()[0]
        if not indexes or indexed == recorded or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert indexed == (recorded if indexes else 0)
