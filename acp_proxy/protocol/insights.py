"""Sans-I/O insights on a connection's calls: what a reader of the latency table looks for first.

Rules:
- Only complete pairs count: a request with its response. A request not answered (yet) is
  counted as pending and enters no figure, so a live or still-loading recording never shows a
  latency it has not measured; the caller says whether more may come.
- Percentiles are ``protocol.latency``'s (nearest rank), the same the CLI prints.
- Each insight names the frame it is about (``seq``) so the page can link to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from acp_proxy.protocol.latency import percentile

LONG_TAIL_RATIO = 5  # p99 over p50 at which a method has a long tail
OUTLIER_RATIO = 3  # a call this many times its method's p95 is an outlier
MIN_CALLS = 20  # fewer calls of a method say nothing about its tail


@dataclass(frozen=True, slots=True)
class Span:
    """One request and, when answered, its answer."""

    seq: int
    method: str
    direction: str
    start_ns: int
    latency_ns: int | None
    is_error: bool = False


def insights(spans: Iterable[Span]) -> dict[str, object]:
    """The slowest call, methods with a long tail, outliers, errors by method, pending."""
    by_method: dict[tuple[str, str], list[Span]] = {}
    pending = answered = 0
    errors: dict[str, int] = {}
    slowest: Span | None = None
    for span in spans:
        if span.latency_ns is None:
            pending += 1
            continue
        answered += 1
        by_method.setdefault((span.method, span.direction), []).append(span)
        if span.is_error:
            errors[span.method] = errors.get(span.method, 0) + 1
        if slowest is None or span.latency_ns > (slowest.latency_ns or 0):
            slowest = span
    tails, outliers = [], []
    for (method, direction), group in sorted(by_method.items()):
        if len(group) < MIN_CALLS:
            continue
        latencies = sorted(s.latency_ns or 0 for s in group)
        p50, p95, p99 = (percentile(latencies, p) for p in (50, 95, 99))
        if p50 and p99 and p99 >= LONG_TAIL_RATIO * p50:
            tails.append({"method": method, "direction": direction, "p50_ns": p50,
                          "p99_ns": p99, "ratio": p99 / p50})  # fmt: skip
        if p95:
            worst = [s for s in group if (s.latency_ns or 0) > OUTLIER_RATIO * p95]
            worst.sort(key=lambda s: -(s.latency_ns or 0))
            outliers += [
                {"method": method, "direction": direction, "seq": s.seq,
                 "latency_ns": s.latency_ns, "p95_ns": p95}
                for s in worst[:3]
            ]  # fmt: skip
    return {
        "answered": answered, "pending": pending,
        "slowest": None if slowest is None else {
            "method": slowest.method, "direction": slowest.direction, "seq": slowest.seq,
            "latency_ns": slowest.latency_ns,
        },
        "long_tail": sorted(tails, key=lambda t: -float(str(t["ratio"]))),
        "outliers": sorted(outliers, key=lambda o: -int(str(o["latency_ns"])))[:10],
        "errors": [{"method": m, "count": n}
                   for m, n in sorted(errors.items(), key=lambda x: -x[1])],
    }  # fmt: skip
