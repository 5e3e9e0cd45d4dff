"""Per-method latency (``stats --by-method``) as a terminal table.

Rules: pure formatting of ``protocol.latency.MethodLatency`` values; milliseconds with three
decimals so nearest-rank percentiles read back exactly; ``-`` where nothing was answered;
method names made visible (they are recorded text).
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_proxy.inspect.render.hits import visible
from acp_proxy.protocol.latency import MethodLatency

HEADER = ("method", "dir", "calls", "errors", "unanswered", "p50 ms", "p95 ms", "p99 ms",
          "max ms")  # fmt: skip


def _ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def latency_rows(summaries: Sequence[MethodLatency]) -> list[tuple[str, ...]]:
    return [
        (visible(s.method) or "-", s.direction, str(s.count), str(s.errors), str(s.unanswered),
         _ms(s.p50_ns), _ms(s.p95_ns), _ms(s.p99_ns), _ms(s.max_ns))
        for s in summaries
    ]  # fmt: skip
