"""The one percentile definition (nearest rank) and the per-method grouping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.latency import Call, by_method, percentile


def test_nearest_rank_on_known_values() -> None:
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 50) == 50
    assert percentile(values, 95) == 95
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile([7, 9, 30], 50) == 9
    assert percentile([7, 9, 30], 95) == 30
    assert percentile([], 50) is None


@pytest.mark.parametrize("p", [0, -1, 100.5])
def test_percentiles_outside_the_range_are_refused(p: float) -> None:
    with pytest.raises(ValueError, match="not in"):
        percentile([1], p)


@given(st.lists(st.integers(0, 10**12), min_size=1), st.floats(0.01, 100))
def test_a_percentile_is_a_measured_value_and_bounds_its_share(values: list[int], p: float) -> None:
    ordered = sorted(values)
    chosen = percentile(ordered, p)
    assert chosen in values
    at_or_below = sum(v <= chosen for v in values)
    assert at_or_below / len(values) >= p / 100 - 1e-9


def test_grouped_by_method_and_direction() -> None:
    calls = [Call("session/prompt", "c2a", n * 1_000_000) for n in (10, 20, 30, 40)]
    calls += [Call("session/prompt", "c2a", None)]
    calls += [Call("fs/read_text_file", "a2c", 5_000_000, is_error=True)]
    prompt, read = sorted(by_method(calls), key=lambda s: s.direction, reverse=True)
    assert (prompt.method, prompt.count, prompt.answered, prompt.unanswered) == (
        "session/prompt",
        5,
        4,
        1,
    )
    assert (prompt.p50_ns, prompt.p95_ns, prompt.p99_ns, prompt.max_ns) == (
        20_000_000,
        40_000_000,
        40_000_000,
        40_000_000,
    )
    assert (read.direction, read.errors, read.p50_ns) == ("a2c", 1, 5_000_000)
    assert read.as_record()["p50_ms"] == 5.0
