"""REC001: a recording that lost frames is an error of its own, said once at the end."""

from __future__ import annotations

from acp_proxy.check.engine import Checker, Losses
from tests.support.fixtures_checks import v1
from tests.support.helpers import observe_all


def _findings(losses: Losses | None) -> list[str]:
    _, records = observe_all(v1())
    checker = Checker(rules={"REC001"}, losses=losses)
    found = [f for record in records for f in checker.observe(record)]
    assert found == []  # never about a frame
    return [f"{f.rule} {f.severity} {f.seq} {f.message}" for f in checker.finish()]


def test_an_incomplete_recording_is_reported_once_with_its_counts_and_reason() -> None:
    losses = Losses(3, 120, "frames not recorded: the recorder fell behind")
    assert _findings(losses) == [
        "REC001 error None the recording is incomplete: 3 frames (120 bytes) were not recorded: "
        "frames not recorded: the recorder fell behind"
    ]


def test_a_complete_recording_and_a_live_check_say_nothing() -> None:
    assert _findings(Losses(0, 0, None)) == []
    assert _findings(None) == []


def test_lost_bytes_without_a_whole_frame_still_count() -> None:
    assert _findings(Losses(0, 5, None))[0].startswith("REC001 error None the recording is")
