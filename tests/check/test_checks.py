"""The rule engine: every rule has a violating and a passing conversation; streaming API."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.check.base import DISABLED_BY_DEFAULT
from acp_proxy.check.engine import RULES, Checker, Finding, rule_ids, select_rules
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import LineSplitter
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.fixtures_checks import CASES, Frames
from tests.support.helpers import observe_all

# Rules whose violation cannot be produced by conversations (tested on their own below).
# REC001: tests/check/test_recording_rule.py; TRN*: tests/check/test_transport_rules.py
SPECIAL = {"ACP000", "ACP023", "REC001", "TRN001", "TRN002", "TRN003"}


def observe_finished(frames: Frames) -> list[FrameRecord]:
    """Like helpers.observe_all, and the streams end: a last line without newline is a frame."""
    _, records = observe_all(frames)
    tails = [d for d, data in frames if not data.endswith(b"\n")]
    if tails:
        observer = ConnectionObserver()
        splitters = {d: LineSplitter() for d in Direction}
        records = []
        for clock, (direction, data) in enumerate(frames):
            for frame in splitters[direction].feed(data):
                records.append(observer.observe(direction, frame, clock, clock))
        for direction, splitter in splitters.items():
            tail = splitter.finish()
            if tail is not None:
                records.append(observer.observe(direction, tail, len(frames), len(frames)))
    return records


def run(frames: Frames, rules: set[str] | None = None) -> list[Finding]:
    return run_records(observe_finished(frames), rules)


def run_records(records: list[FrameRecord], rules: set[str] | None = None) -> list[Finding]:
    checker = Checker(rules=rules)
    findings = [f for r in records for f in checker.observe(r)]
    return findings + checker.finish()


def test_every_rule_has_both_fixtures() -> None:
    assert set(CASES) | SPECIAL == set(rule_ids())
    for rule, (violating, passing) in CASES.items():
        assert violating, rule
        assert passing, rule


@pytest.mark.parametrize("rule", sorted(CASES))
def test_violating_fixtures_are_caught(rule: str) -> None:
    for index, frames in enumerate(CASES[rule][0]):
        found = run(frames, {rule})
        assert found, f"{rule} violating fixture {index} not caught"
        assert {f.rule for f in found} == {rule}
        info = next(i for i in RULES if i.id == rule)
        assert all(f.severity == info.severity for f in found)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_passing_fixtures_are_clean(rule: str) -> None:
    assert run(CASES[rule][1], {rule}) == []


def test_recorder_self_check_acp023() -> None:
    _, records = observe_all(V2_CONVERSATION)
    assert run_records(records, {"ACP023"}) == []
    notice = next(i for i, r in enumerate(records) if r.update_kind == "notice")
    records[notice] = records[notice]._replace(update_kind="other")
    found = run_records(records, {"ACP023"})
    assert [(f.rule, f.seq) for f in found] == [("ACP023", records[notice].seq)]


@pytest.mark.parametrize("conversation", [V1_CONVERSATION, V2_CONVERSATION])
def test_spec_shaped_conversations_are_clean(conversation: Frames) -> None:
    assert run(conversation) == []


def test_findings_name_their_frame() -> None:
    _, records = observe_all(CASES["ACP013"][0][0])
    checker = Checker(rules={"ACP013"}, connection_id=7)
    found = [f for r in records for f in checker.observe(r)]
    assert found == [
        Finding("ACP013", "error", "stopReason 'done' is not one of v1's five", 6, "a2c", 7)
    ]
    assert checker.finish() == []
    assert checker.finish() == []  # once only


def test_findings_come_as_frames_arrive() -> None:
    """Streaming: a finding is returned by the observe() call of the frame that shows it."""
    _, records = observe_all(CASES["ACP019"][0][0])
    checker = Checker(rules={"ACP019"})
    per_frame = [checker.observe(r) for r in records]
    assert [bool(f) for f in per_frame] == [False] * (len(records) - 1) + [True]


def test_selection() -> None:
    everything = set(rule_ids())
    assert select_rules() == everything - DISABLED_BY_DEFAULT
    assert select_rules(["acp02"]) == {f"ACP02{i}" for i in range(10)}
    assert select_rules(["ACP03"]) == {f"ACP03{i}" for i in range(5)}
    assert "ACP035" in select_rules(["ACP035"])
    assert select_rules(ignore=["ACP0"]) == {"REC001", "TRN001", "TRN002", "TRN003"}
    assert select_rules(ignore=["ACP0", "REC", "TRN"]) == set()
    with pytest.raises(ValueError, match="XYZ"):
        select_rules(["XYZ"])


def test_disabled_rule_stays_off_by_default() -> None:
    assert run(CASES["ACP035"][0][0]) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"), max_size=12),
       st.lists(st.booleans(), min_size=12, max_size=12))  # fmt: skip
def test_peer_bytes_never_raise(lines: list[bytes], directions: list[bool]) -> None:
    from tests.support.helpers import A2C, C2A

    frames = [(A2C if d else C2A, data) for data, d in zip(lines, directions, strict=False)]
    run(frames, set(rule_ids()))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(sorted(CASES)), min_size=1, max_size=4), st.data())
def test_any_mix_of_fixtures_never_raises(rules: list[str], data: st.DataObject) -> None:
    frames: Frames = []
    for rule in rules:
        violating, passing = CASES[rule]
        frames += data.draw(st.sampled_from([*violating, passing]))
    run(frames, set(rule_ids()))
