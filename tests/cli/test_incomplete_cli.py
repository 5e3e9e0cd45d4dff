"""An incomplete recording is never passed off as whole: ls marks it, show says so on stderr,
check reports REC001 and exits 1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import observe_all
from tests.support.processes import acp_proxy as run_acp_proxy

REASON = "frames not recorded: the recorder fell behind (forwarding waits at most 1s for it)"


def _proxy(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_acp_proxy(*args, "--db", str(db))


@pytest.fixture
def incomplete(db_path: Path) -> Path:
    observer, records = observe_all(V1_CONVERSATION)
    db = connect(db_path)
    for label, lost in (("whole", None), ("holey", (3, 4096))):
        writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "test", 1, label=label))
        writer.append(records, facts=observer.facts(), lost=lost)
        if lost is not None:
            writer.update(status="incomplete", error=REASON, exit_code=0)
        else:
            writer.update(status="exited", exit_code=0)
    db.close()
    return db_path


def test_ls_marks_the_incomplete_recording_only(incomplete: Path) -> None:
    listed = _proxy(incomplete, "ls")
    assert listed.returncode == 0
    (whole,) = [line for line in listed.stdout.splitlines() if " whole " in line]
    (holey,) = [line for line in listed.stdout.splitlines() if " holey " in line]
    assert "incomplete" not in whole
    assert holey.endswith("exit 0, 1 error, incomplete: 3 frames lost")
    records = [json.loads(line) for line in _proxy(incomplete, "ls", "--json").stdout.splitlines()]
    assert [(r["label"], r["status"], r["frames_lost"]) for r in records] == [
        ("whole", "exited", 0), ("holey", "incomplete", 3),
    ]  # fmt: skip


def test_show_says_on_stderr_what_an_incomplete_recording_lost(incomplete: Path) -> None:
    whole, holey = _proxy(incomplete, "show", "whole"), _proxy(incomplete, "show", "holey")
    assert whole.returncode == holey.returncode == 0
    assert whole.stdout == holey.stdout  # the frames themselves, unchanged
    assert whole.stderr == ""
    assert holey.stderr == (
        f"acp-proxy: connection 2 is incomplete: 3 frames were not recorded ({REASON})\n"
    )


def test_check_reports_an_incomplete_recording(incomplete: Path) -> None:
    whole = _proxy(incomplete, "check", "whole", "--ignore", "ACP000")
    holey = _proxy(incomplete, "check", "holey", "--ignore", "ACP000")
    assert "REC001" not in whole.stdout
    assert holey.returncode == 1
    assert "REC001" in holey.stdout
    assert "3 frames (4096 bytes) were not recorded" in holey.stdout
