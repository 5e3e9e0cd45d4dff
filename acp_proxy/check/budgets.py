"""Sans-I/O latency budgets: ``session/prompt=p99:30s`` read, and the calls over one found.

Rules:
- A budget is ``METHOD=STATISTIC:DURATION``. METHOD is a glob over JSON-RPC methods
  (``session/*``, ``fs/*``, ``*``); STATISTIC is ``pN`` (a nearest-rank percentile, N in
  (0, 100], e.g. ``p50``, ``p99``, ``p99.9``) or ``max``; DURATION is a number with ``us``,
  ``ms``, ``s`` or ``m`` (``250ms``, ``30s``, ``1.5m``). Anything else is a ``ValueError`` whose
  text is one line for the user.
- Latency means what ``protocol.latency`` means everywhere else (``stats --by-method``, the
  MCP server, the inspector): request to response, per method and direction, unanswered
  requests left out, percentiles nearest-rank, so ``check`` and ``stats`` agree on the number.
- Each (method, direction) whose statistic is over the budget is one finding of rule
  ``LAT001`` (an error): the budget's statistic, the measured value, the limit and how many
  calls it is made of. A method with no answered call has no latency and is never over.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from acp_proxy.check.base import Finding, RuleInfo
from acp_proxy.plural import counted
from acp_proxy.protocol.latency import Call, duration_text, match_limit, percentile

__all__ = ["LATENCY_RULE", "Budget", "over_budget", "parse_budget"]

LATENCY_RULE = RuleInfo(
    "LAT001", "error", "a method's latency is over its budget (check --max-latency)",
    "acp-proxy check --max-latency (docs/checks.md#latency-budgets)",
    "find what makes the method slow (acp-proxy stats --by-method, the inspector's latency "
    "view), or raise the budget if the new latency is expected",
)  # fmt: skip

_UNITS = {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
_BUDGET = re.compile(
    r"(?P<method>[^=]+)=(?P<statistic>max|p\d+(?:\.\d+)?):(?P<amount>\d+(?:\.\d+)?)"
    r"(?P<unit>us|ms|s|m)"
)
FORM = "METHOD=pN:DURATION or METHOD=max:DURATION, e.g. 'session/prompt=p99:30s'"


@dataclass(frozen=True, slots=True)
class Budget:
    method: str  # a glob
    statistic: str  # "max" or "pN"
    limit_ns: int
    text: str  # as the user wrote it

    def measure(self, latencies: Sequence[int]) -> int | None:
        """The budget's statistic of ``latencies`` (sorted ascending), None when empty."""
        if not latencies:
            return None
        if self.statistic == "max":
            return latencies[-1]
        return percentile(latencies, float(self.statistic[1:]))


def parse_budget(text: str) -> Budget:
    """``METHOD=STATISTIC:DURATION`` as a ``Budget`` (see the rules)."""
    found = match_limit(_BUDGET, text, "latency budget", FORM)
    statistic = found["statistic"]
    limit = round(float(found["amount"]) * _UNITS[found["unit"]])
    return Budget(found["method"].strip(), statistic, limit, text.strip())


def over_budget(
    calls: Iterable[Call], budgets: Sequence[Budget], connection_id: int | None = None
) -> list[Finding]:
    """One ``LAT001`` finding per (method, direction) and budget it is over (see the rules)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        latencies = groups.setdefault((call.method, call.direction), [])
        if call.latency_ns is not None:
            latencies.append(call.latency_ns)
    found = []
    for (method, direction), latencies in sorted(groups.items()):
        latencies.sort()
        for budget in budgets:
            if not fnmatch.fnmatchcase(method, budget.method):
                continue
            value = budget.measure(latencies)
            if value is None or value <= budget.limit_ns:
                continue
            message = (
                f"{method} ({direction}) {budget.statistic} latency {duration_text(value)} is over "
                f"its budget of {duration_text(budget.limit_ns)} ({budget.text}; "
                f"{counted(len(latencies), 'answered call')})"
            )
            found.append(Finding(LATENCY_RULE.id, LATENCY_RULE.severity, message, None,
                                 direction, connection_id))  # fmt: skip
    return found
