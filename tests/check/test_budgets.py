"""Latency budgets: what ``--max-latency`` reads, and which calls are over one."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.check.budgets import over_budget, parse_budget
from acp_proxy.cli.main import main
from acp_proxy.protocol.latency import Call, by_method

SAMPLE = Path(__file__).parents[2] / "recordings" / "v2-draft.jsonl"
MS = 1_000_000
PROMPTS = [Call("session/prompt", "c2a", n * MS) for n in range(1, 101)]  # 1 ms .. 100 ms


@pytest.mark.parametrize(
    ("text", "method", "statistic", "limit"),
    [
        ("session/prompt=p99:30s", "session/prompt", "p99", 30_000 * MS),
        ("fs/*=max:500ms", "fs/*", "max", 500 * MS),
        ("*=p99.9:1.5m", "*", "p99.9", 90_000 * MS),
        (" initialize=p50:250us ", "initialize", "p50", 250_000),
    ],
)
def test_a_budget_is_read(text: str, method: str, statistic: str, limit: int) -> None:
    budget = parse_budget(text)
    assert (budget.method, budget.statistic, budget.limit_ns) == (method, statistic, limit)


@pytest.mark.parametrize("text", ["session/prompt", "x=p99", "x=p99:30", "x=p0:1s", "x=p101:1s",
                                  "x=avg:1s", "=p99:1s", "x=p99:30h"])  # fmt: skip
def test_a_budget_that_is_not_one_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"latency budget|percentile") as caught:
        parse_budget(text)
    assert "\n" not in str(caught.value)


def test_over_budget_uses_the_percentile_stats_uses() -> None:
    (stats,) = by_method(PROMPTS)
    assert stats.p99_ns == 99 * MS
    assert over_budget(PROMPTS, [parse_budget("session/prompt=p99:99ms")]) == []
    (found,) = over_budget(PROMPTS, [parse_budget("session/*=p99:98ms")], connection_id=4)
    assert (found.rule, found.severity, found.connection_id, found.direction) == (
        "LAT001", "error", 4, "c2a",
    )  # fmt: skip
    assert found.message == (
        "session/prompt (c2a) p99 latency 99 ms is over its budget of 98 ms "
        "(session/*=p99:98ms; 100 answered calls)"
    )
    assert len(over_budget(PROMPTS, [parse_budget("*=max:99ms")])) == 1
    assert over_budget(PROMPTS, [parse_budget("fs/*=max:1us")]) == []  # another method


def test_unanswered_calls_have_no_latency() -> None:
    never = [Call("session/prompt", "c2a", None)] * 3
    assert over_budget(never, [parse_budget("*=max:1us")]) == []


def test_check_exits_1_over_a_budget_and_0_within() -> None:
    runner = CliRunner()
    ref = str(SAMPLE)  # initialize took 463 ms
    within = runner.invoke(main, ["check", ref, "--ignore", "ACP", "--max-latency",
                                  "initialize=max:1s"])  # fmt: skip
    assert within.exit_code == 0, within.output
    assert within.output.startswith("clean: 1 connection, 25 frames, ")
    over = runner.invoke(main, ["check", ref, "--ignore", "ACP", "--max-latency",
                                "initialize=max:400ms"])  # fmt: skip
    assert over.exit_code == 1
    assert over.output.startswith(
        "connection 1 end: error LAT001: initialize (c2a) max latency 463 ms is over its budget "
        "of 400 ms (initialize=max:400ms; 1 answered call)\n    fix: "
    )
    bad = runner.invoke(main, ["check", ref, "--max-latency", "initialize<1s"])
    assert bad.exit_code == 2
    assert "is not a latency budget" in bad.output
