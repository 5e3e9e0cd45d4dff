"""diff's gates: a latency regression or a capability drift beyond a threshold fails CI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.check.drift import capabilities, drifts, parse_slowdown, slowdowns
from acp_proxy.cli.main import main
from acp_proxy.protocol.latency import Call
from tests.support.helpers import A2C, C2A, line, observe_all, write_recording

MS = 1_000_000


def _calls(*latencies_ms: int) -> list[Call]:
    return [Call("session/prompt", "c2a", ms * MS) for ms in latencies_ms]


def test_a_slowdown_limit_is_relative_or_absolute() -> None:
    before, after = _calls(100, 100, 100), _calls(100, 100, 125)
    assert slowdowns(before, after, [parse_slowdown("session/prompt=max:25%")]) == []
    (slower,) = slowdowns(before, after, [parse_slowdown("session/*=max:20%")])
    assert (slower.before_ns, slower.after_ns) == (100 * MS, 125 * MS)
    assert slower.sentence() == (
        "session/prompt (c2a) max 100 ms -> 125 ms (+25%), more than session/*=max:20% allows"
    )
    assert slowdowns(before, after, [parse_slowdown("*=max:+25ms")]) == []
    assert len(slowdowns(before, after, [parse_slowdown("*=max:+24ms")])) == 1
    assert slowdowns(before, after, [parse_slowdown("*=p50:1%")]) == []  # the median held
    assert slowdowns([], after, [parse_slowdown("*=max:1%")]) == []  # nothing to compare to
    with pytest.raises(ValueError, match="is not a slowdown limit"):
        parse_slowdown("session/prompt=p95:fast")


def _initialize(agent_caps: dict[str, object], version: int = 1) -> list[tuple[object, bytes]]:
    return [
        (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "clientCapabilities": {"fs": {"readTextFile": True}}}})),
        (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": version, "agentCapabilities": agent_caps,
            "authMethods": [{"id": "oauth"}], "_meta": {"x": 1}}})),
    ]  # fmt: skip


def test_capabilities_are_the_initialize_exchange_as_paths() -> None:
    _, records = observe_all(
        _initialize({"loadSession": True, "promptCapabilities": {"image": False}})
    )  # type: ignore[arg-type]
    assert capabilities(records) == {
        "client.protocolVersion": 1, "client.fs.readTextFile": True,
        "agent.protocolVersion": 1, "agent.loadSession": True,
        "agent.promptCapabilities.image": False, "agent.authMethods": ["oauth"],
    }  # fmt: skip
    before = {"agent.loadSession": True, "agent.x": 1}
    after = {"agent.x": 2, "agent.new": None}
    assert [d.sentence() for d in drifts(before, after)] == [
        "agent.loadSession: true -> (absent)", "agent.new: (absent) -> null", "agent.x: 1 -> 2",
    ]  # fmt: skip


@pytest.fixture
def two_runs(db_path: Path) -> Path:
    write_recording(db_path, _initialize({"loadSession": True}), label="before")  # type: ignore[arg-type]
    write_recording(db_path, _initialize({"loadSession": False}), label="after")  # type: ignore[arg-type]
    return db_path


def test_diff_fails_on_drift_beyond_the_threshold_only(two_runs: Path) -> None:
    args = ["diff", "--db", str(two_runs), "before", "after", "--max-capability-drift"]
    over = CliRunner().invoke(main, [*args, "0"])
    assert over.exit_code == 1
    assert over.output.endswith(
        "capability drift: 1 capability changed, 0 allowed\n  agent.loadSession: true -> false\n"
    )
    within = CliRunner().invoke(main, [*args, "1"])
    assert within.exit_code == 0  # the messages differ, but the gate decides
    assert within.output.startswith("differ: ")
    assert within.output.endswith("gates: within every limit\n")
    document = json.loads(CliRunner().invoke(main, [*args, "0", "--format", "json"]).output)
    assert document["gates"]["failed"] is True
    assert document["gates"]["capability_drift"]["changed"] == [{
        "path": "agent.loadSession", "before": True, "after": False,
        "before_present": True, "after_present": True,
    }]  # fmt: skip
    assert document["equal"] is False


def test_without_gates_diff_keeps_its_exit_status(two_runs: Path) -> None:
    plain = CliRunner().invoke(main, ["diff", "--db", str(two_runs), "before", "after"])
    assert plain.exit_code == 1
    assert "gates" not in plain.output
    bad = CliRunner().invoke(main, ["diff", "--db", str(two_runs), "before", "after",
                                    "--max-slowdown", "x"])  # fmt: skip
    assert bad.exit_code == 2
