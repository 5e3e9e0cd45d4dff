"""protocol/insights.py: only complete pairs count, and each insight names its frame."""

from __future__ import annotations

from acp_proxy.protocol.insights import Span, insights

MS = 1_000_000


def spans(method: str, latencies_ms: list[int | None], first_seq: int = 1) -> list[Span]:
    return [
        Span(first_seq + i, method, "c2a", i * 10 * MS, None if ms is None else ms * MS)
        for i, ms in enumerate(latencies_ms)
    ]


def test_pending_requests_enter_no_figure() -> None:
    found = insights(spans("session/prompt", [5, None, 7, None]))
    assert found["answered"] == 2
    assert found["pending"] == 2
    assert found["slowest"] == {"method": "session/prompt", "direction": "c2a", "seq": 3,
                                "latency_ns": 7 * MS}  # fmt: skip


def test_long_tail_outlier_and_errors() -> None:
    # 99 calls of 10 ms and one of 900 ms: the 900 is p100, p99 is 10 ms: no long tail yet.
    calm = spans("fs/read_text_file", [10] * 99 + [900])
    found = insights(calm)
    assert found["long_tail"] == []
    assert [o["seq"] for o in found["outliers"]] == [100]  # over 3x the p95 of 10 ms
    # Ten slow calls among 100: p99 is slow, p50 is not: a long tail.
    tail = spans("terminal/output", [10] * 90 + [200] * 10, first_seq=1000)
    found = insights([*calm, *tail])
    assert [t["method"] for t in found["long_tail"]] == ["terminal/output"]
    assert found["long_tail"][0]["ratio"] == 20
    errors = [Span(5000, "session/set_mode", "c2a", 0, MS, is_error=True)] * 2
    assert insights(errors)["errors"] == [{"method": "session/set_mode", "count": 2}]


def test_few_calls_say_nothing_about_a_tail() -> None:
    found = insights(spans("initialize", [1, 1, 1, 500]))
    assert found["long_tail"] == []
    assert found["outliers"] == []
    assert found["slowest"]["seq"] == 4  # type: ignore[index]
