"""The inspector's background work: quick reads first (turns.py) and the rule checker in a
process of its own (checking.py), on real recordings through ``Inspector``."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from acp_proxy.errors import UnreadableRecording
from acp_proxy.serve.ui.state import FIRST_STEP, Database, Inspector
from acp_proxy.serve.ui.turns import QuickFirst
from acp_proxy.store.readers import FrameFilter
from tests.serve.test_first_screen_browser import turns
from tests.support.helpers import C2A, line, write_recording
from tests.support.ui_server import wait_for

pytestmark = pytest.mark.timeout(60)
FRAMES = sum(1 for _ in turns(20_000))


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("background") / "r.sqlite"
    write_recording(path, turns(FRAMES), label="turns")
    with sqlite3.connect(path) as db:  # ended: its check finishes
        db.execute("UPDATE connection SET status = 'exited', exit_code = 0")
    db.close()
    return path


@pytest.fixture
def inspector(long_recording: Path) -> Iterator[Inspector]:
    found = Inspector(Database(long_recording))
    yield found
    found.close()


def test_a_background_turn_waits_for_the_quick_reads() -> None:
    turns = QuickFirst()
    assert turns.background_turn(0)
    got: list[bool] = []
    with turns.quick():
        assert turns.busy()
        assert not turns.background_turn(0.01)  # still counted when its time ran out
        waiting = threading.Thread(target=lambda: got.append(turns.background_turn(30)))
        waiting.start()
        with turns.quick():  # a second one: the first one's end is not enough
            pass
        assert turns.busy()
    waiting.join(30)
    assert got == [True]
    assert not turns.busy()


def test_indexing_ahead_waits_while_a_quick_read_is_on_its_way(inspector: Inspector) -> None:
    with inspector.turns.quick():
        timeline = inspector.extend(1, FrameFilter(), 100, scan=True, budget_s=0.2)
        # What was asked for (100 rows) is indexed; nothing beyond it while the read waits.
        assert timeline.index.scanned_seq == FIRST_STEP
        assert not timeline.caught_up
    timeline = inspector.extend(1, FrameFilter(), 100, scan=True, budget_s=30)
    assert timeline.caught_up


def test_findings_come_from_a_process_of_their_own_a_page_at_a_time(
    inspector: Inspector,
) -> None:
    """Paged in the order found, a frame's own with its rule's words."""
    assert inspector.findings(1)["findings"] == []  # nothing checked before it is started
    inspector.start_checking(1)
    done = wait_for(lambda: (f := inspector.findings(1))["finished"] and f, "the check", 30)
    assert done["complete"]
    assert done["checked_seq"] == FRAMES
    everything = orjson.loads(orjson.dumps(done["findings"]))
    total = done["total"]
    assert len(everything) == min(total, 5_000)
    assert done["more"] == (total > 5_000)
    # No initialize: every prompt is flagged; findings are read in pages, in order.
    page = orjson.loads(orjson.dumps(inspector.findings(1, since=3, limit=2)))
    assert page["findings"] == everything[3:5]
    assert page["more"]
    assert page["total"] == total
    own, stored = inspector.frame_findings(1, everything[0]["seq"])
    assert own
    assert all(f["seq"] == everything[0]["seq"] for f in own)
    assert stored == []
    assert own[0]["rule"]
    assert own[0]["fix"]
    assert inspector.frame_findings(1, 10**9) == ([], [])
    checker = inspector._checks[1].process
    assert checker.wait(30) == 0  # a finished check's process has ended


def _checking_failure(inspector: Inspector, connection_id: int) -> str:
    """What the inspector says once the check of ``connection_id`` has failed."""

    def failed() -> str | None:
        try:
            inspector.findings(connection_id)
        except UnreadableRecording as error:
            return str(error)
        return None

    return wait_for(failed, "the failure")


def test_a_checker_that_stops_is_a_failure_the_page_is_told(inspector: Inspector) -> None:
    inspector.start_checking(1)
    inspector._checks[1].process.kill()
    said = _checking_failure(inspector, 1)
    assert said.startswith("the rule checker stopped")


def test_a_damaged_recording_is_said_by_the_checker(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    write_recording(path, [(C2A, line({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))])
    inspector = Inspector(Database(path))
    try:
        inspector.start_checking(7)  # no such connection
        said = _checking_failure(inspector, 7)
        assert "stopped" not in said, said  # the checker said why itself
    finally:
        inspector.close()


def test_findings_of_a_range_of_frames_from_the_checkers_file(
    inspector: Inspector, tmp_path: Path
) -> None:
    """What a page shows: the findings of the frames on screen, read from a file the checker
    wrote (none kept in the server's memory), which goes with the inspector."""
    inspector.start_checking(1)
    done = wait_for(lambda: (f := inspector.findings(1))["finished"] and f, "the check", 30)
    everything: list[dict[str, object]] = []
    while len(everything) < done["total"]:
        page = orjson.loads(orjson.dumps(inspector.findings(1, since=len(everything))))
        everything += page["findings"]
    seqs = sorted({int(str(f["seq"])) for f in everything if f["seq"] is not None})
    first, last = seqs[10], seqs[20]
    shown = orjson.loads(orjson.dumps(inspector.findings(1, frames=(first, last))))
    assert shown["findings"] == [
        f for f in everything if f["seq"] is not None and first <= int(str(f["seq"])) <= last
    ]
    assert not shown["more"]
    assert set(shown["rules"]) == {f["rule"] for f in shown["findings"]}
    assert all(words["summary"] for words in shown["rules"].values())
    assert shown["checked_seq"] == FRAMES
    assert shown["complete"]
    few = orjson.loads(orjson.dumps(inspector.findings(1, limit=3, frames=(first, last))))
    assert few["findings"] == shown["findings"][:3]
    assert few["more"]
    nothing = inspector.findings(1, frames=(FRAMES + 1, FRAMES + 100))
    assert nothing["findings"] == []
    assert not nothing["more"]
    # The file is the inspector's, and goes with it.
    file = inspector._checks[1].findings.path
    assert file.exists()
    inspector.close()
    assert not file.exists()
    assert not file.parent.exists()


def test_stored_findings_of_a_frame_and_of_a_range(tmp_path: Path) -> None:
    """The findings ``record --check`` stored beside the frames: a frame's own in its
    detail, those of a range of frames beside the checker's."""
    path = tmp_path / "r.sqlite"
    write_recording(path, turns(70), label="turns")
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO finding (connection_id, seq, direction, rule, severity, message, "
            "found_ns) VALUES (1, ?, 'c2a', 'ACP999', 'warning', ?, 0)",
            [(8, "eight"), (8, "eight again"), (15, "fifteen"), (None, "no frame")],
        )
    db.close()
    inspector = Inspector(Database(path))
    try:
        _, stored = inspector.frame_findings(1, 8)
        assert [f["message"] for f in stored] == ["eight", "eight again"]
        assert inspector.frame_findings(1, 9) == ([], [])
        ranged = inspector.findings(1, frames=(9, 20))["stored"]
        assert [f["message"] for f in ranged] == ["fifteen"]
        every = inspector.findings(1)["stored"]
        assert [f["message"] for f in every] == ["no frame", "eight", "eight again", "fifteen"]
    finally:
        inspector.close()
