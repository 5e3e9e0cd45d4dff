"""delete and prune: rows, frames and findings go, space comes back, live connections stay."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_proxy.cli.tidy import parse_age
from acp_proxy.store import tidy
from acp_proxy.store.database import connect
from tests.support.cli import run
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.polling import until
from tests.support.processes import started

DAY_NS = 86400 * 10**9


def _finished(db_path: Path, label: str, age_days: float) -> int:
    connection_id = write_recording(db_path, V1_CONVERSATION * 50, label=label)
    db = connect(db_path)
    started = time.time_ns() - int(age_days * DAY_NS)
    db.execute(
        "UPDATE connection SET status = 'exited', exit_code = 0, started_ns = ? WHERE id = ?",
        (started, connection_id),
    )
    db.execute(
        "INSERT INTO finding (connection_id, seq, rule, severity, message, found_ns) "
        "VALUES (?, 1, 'r', 'error', 'm', 0)",
        (connection_id,),
    )
    db.close()
    return connection_id


def _ids(db_path: Path) -> list[int]:
    db = connect(db_path, create=False)
    ids = [r[0] for r in db.execute("SELECT id FROM connection ORDER BY id")]
    db.close()
    return ids


def _count(db_path: Path, table: str) -> int:
    db = connect(db_path, create=False)
    count = int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    db.close()
    return count


def test_parse_age() -> None:
    assert parse_age("30d") == 30 * 86400
    assert parse_age("12h") == 12 * 3600
    assert parse_age("2w") == 14 * 86400
    assert parse_age("1.5") == 1.5 * 86400


def test_bad_age_is_a_usage_error(db_path: Path) -> None:
    _finished(db_path, "a", 1)
    assert "not an age" in run(db_path, "prune", "--older-than", "soon", code=2).output
    assert "say what to prune" in run(db_path, "prune", code=2).output


def test_delete_removes_frames_and_findings_and_reclaims_space(
    db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    keep = _finished(db_path, "keep", 1)
    gone = _finished(db_path, "gone", 1)
    frames_each = _count(db_path, "frame") // 2
    before = tidy.database_bytes(db_path)
    result = run(db_path, "delete", "gone")
    assert result.output.startswith(f"deleted 1 connection ({gone}): {frames_each} frames, ")
    assert "1 finding;" in result.output
    assert "reclaimed" in result.output
    assert _ids(db_path) == [keep]
    assert _count(db_path, "frame") == frames_each
    assert _count(db_path, "finding") == 1
    assert tidy.database_bytes(db_path) < before
    capfd.readouterr()
    run(db_path, "delete", str(keep), "gone", code=2)  # one unknown REF: nothing deleted
    assert "no recording matches 'gone'" in capfd.readouterr().err
    assert _ids(db_path) == [keep]


def test_delete_dry_run_changes_nothing(db_path: Path) -> None:
    first = _finished(db_path, "a", 1)
    assert run(db_path, "delete", "--dry-run", "a").output.startswith(f"would delete {first} (a)")
    assert _ids(db_path) == [first]


def test_prune_by_age_and_keep(db_path: Path) -> None:
    old = [_finished(db_path, f"old{i}", 40 + i) for i in range(3)]
    young = _finished(db_path, "young", 1)
    dry = run(db_path, "prune", "--older-than", "30d", "--dry-run").output.splitlines()
    assert [int(x.split()[2]) for x in dry] == old[::-1]  # oldest first
    assert _ids(db_path) == [*old, young]
    run(db_path, "prune", "--older-than", "30d", "--keep", "3")  # keeps the 3 started last
    assert _ids(db_path) == [old[0], old[1], young]
    run(db_path, "prune", "--older-than", "30d")
    assert _ids(db_path) == [young]
    assert run(db_path, "prune", "--older-than", "30d").output == "nothing to prune\n"


@pytest.mark.timeout(60)
def test_prune_and_delete_never_touch_a_live_connection(db_path: Path) -> None:
    finished = _finished(db_path, "done", 40)
    agent = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db_path), "--label", "live"]
    with started([*argv, "--", *agent], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as record:
        assert record.stdin is not None
        until(lambda: len(_ids(db_path)) >= 2, "the live connection", 30)
        live = _ids(db_path)[1]
        result = run(db_path, "prune", "--older-than", "0s")
        assert result.output.startswith(f"deleted 1 connection ({finished})")
        assert _ids(db_path) == [live]
        run(db_path, "delete", "live", code=2)
        assert _ids(db_path) == [live]
        record.stdin.write(b'{"jsonrpc":"2.0","method":"x"}\n')
        record.stdin.close()
        assert record.wait(timeout=30) == 0
    assert _count(db_path, "frame") == 1
    # Its recorder may still be indexing after the proxy exited: live until it says it is done.
    candidates = tidy.candidates
    until(lambda: candidates(connect(db_path, create=False))[0].recorder_pid is None,
          "the recorder's end", 30)  # fmt: skip
    run(db_path, "delete", "live")
    assert _ids(db_path) == []


def test_a_running_row_whose_proxy_is_gone_is_not_live() -> None:
    with started([sys.executable, "-c", "pass"]) as dead:
        dead.wait()
    row = tidy.Candidate(1, None, 0, "running", dead.pid)
    assert not tidy.is_live(row)
    assert tidy.is_live(tidy.Candidate(1, None, 0, "running", os.getpid()))
    assert not tidy.is_live(tidy.Candidate(1, None, 0, "exited", os.getpid()))


def test_newest_means_the_latest_start_not_the_highest_id(db_path: Path) -> None:
    made_a_minute_ago = _finished(db_path, "mine", 1 / 1440)
    imported_old = [_finished(db_path, f"sample{i}", 0.5 - i / 100) for i in range(2)]
    dry = run(db_path, "prune", "--keep", "1", "--dry-run").output.splitlines()
    assert [int(x.split()[2]) for x in dry] == imported_old  # oldest first
    result = run(db_path, "delete", "last", "--dry-run").output  # `last`, as a bare show opens
    assert result.startswith(f"would delete {made_a_minute_ago} (mine)")


def test_keep_0_alone_removes_every_finished_recording_after_asking(
    db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ids = [_finished(db_path, f"r{i}", i) for i in range(3)]
    dry = run(db_path, "prune", "--keep", "0", "--dry-run").output.splitlines()
    assert [int(x.split()[2]) for x in dry] == ids[::-1]
    capfd.readouterr()
    run(db_path, "prune", "--keep", "0", code=2)  # no terminal to ask on
    assert "add --yes" in capfd.readouterr().err
    assert _ids(db_path) == ids
    assert run(db_path, "prune", "--keep", "0", "--yes").output.startswith("deleted 3 connections")
    assert _ids(db_path) == []
