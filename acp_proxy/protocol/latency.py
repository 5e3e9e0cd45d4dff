"""Sans-I/O latency by method: one percentile definition for the CLI, the MCP server and the UI.

Rules:
- A call is one JSON-RPC request and its response, grouped by the request's method and the
  direction it travelled (``c2a``: the client asked, ``a2c``: the agent asked).
- Percentiles are nearest-rank: the p-th percentile of n sorted latencies is the value at rank
  ``ceil(p / 100 * n)`` (1-based). It is always one of the measured values, so a fixture with
  known latencies has exact, checkable percentiles.
- A request never answered counts in ``unanswered`` and in no percentile; an error response
  counts in ``errors`` and in the percentiles (the caller waited for it all the same).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PERCENTILES = (50, 95, 99)


@dataclass(frozen=True, slots=True)
class Call:
    """One request as recorded: its method, direction, and its answer if it had one."""

    method: str
    direction: str
    latency_ns: int | None  # None: never answered
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class MethodLatency:
    """The calls of one method in one direction, summarized."""

    method: str
    direction: str
    count: int
    answered: int
    unanswered: int
    errors: int
    p50_ns: int | None
    p95_ns: int | None
    p99_ns: int | None
    max_ns: int | None

    def as_record(self) -> dict[str, object]:
        """A JSON-ready dict, latencies in milliseconds as well as nanoseconds."""
        record: dict[str, object] = {
            "method": self.method,
            "direction": self.direction,
            "count": self.count,
            "answered": self.answered,
            "unanswered": self.unanswered,
            "errors": self.errors,
        }
        for name in ("p50", "p95", "p99", "max"):
            value: int | None = getattr(self, f"{name}_ns")
            record[f"{name}_ns"] = value
            record[f"{name}_ms"] = None if value is None else value / 1e6
        return record


def duration_text(ns: int) -> str:
    """A latency for a finding's message: three significant digits in s, ms or us."""
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.3g} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e3:.3g} us"


def match_limit(form: re.Pattern[str], text: str, what: str, written: str) -> re.Match[str]:
    """``text`` matched whole by ``form`` (with a ``statistic`` group: ``max`` or ``pN``, N in
    (0, 100]); a ``ValueError`` naming ``text`` as not a ``what`` (``written``: the form)."""
    found = form.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a {what}: write {written}")
    statistic = found["statistic"]
    if statistic != "max" and not 0 < float(statistic[1:]) <= 100:
        raise ValueError(f"{text!r}: a percentile is between p0 (excluded) and p100")
    return found


def percentile(sorted_values: Sequence[int], p: float) -> int | None:
    """The nearest-rank ``p``-th percentile of values already sorted ascending."""
    if not sorted_values:
        return None
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is not in (0, 100]")
    rank = math.ceil(p / 100 * len(sorted_values))
    return sorted_values[max(rank, 1) - 1]


def by_method(calls: Iterable[Call]) -> list[MethodLatency]:
    """Per (method, direction): counts and latency percentiles, ordered by method then direction."""
    groups: dict[tuple[str, str], list[Call]] = {}
    for call in calls:
        groups.setdefault((call.method, call.direction), []).append(call)
    summaries = []
    for (method, direction), group in sorted(groups.items()):
        latencies = sorted(c.latency_ns for c in group if c.latency_ns is not None)
        p50, p95, p99 = (percentile(latencies, p) for p in PERCENTILES)
        summaries.append(
            MethodLatency(
                method=method,
                direction=direction,
                count=len(group),
                answered=len(latencies),
                unanswered=len(group) - len(latencies),
                errors=sum(c.is_error for c in group),
                p50_ns=p50,
                p95_ns=p95,
                p99_ns=p99,
                max_ns=latencies[-1] if latencies else None,
            )
        )
    return summaries
