"""Sans-I/O gates for ``diff``: a latency regression or a capability drift beyond a threshold.

Rules:
- A slowdown limit is ``METHOD=STATISTIC:LIMIT``: METHOD a glob, STATISTIC ``pN`` or ``max`` as
  in check/budgets.py, LIMIT a percentage (``20%``: B may be at most that much slower than A)
  or a duration (``+500ms``, ``2s``: at most that much slower). Latency is protocol/latency.py's
  (request to response, per method and direction, nearest-rank). Only a (method, direction)
  with answered calls on both sides is compared: one that only B has is no regression.
- Capabilities are what the ``initialize`` exchange declares, as dotted paths: the request's
  ``protocolVersion`` and ``clientCapabilities`` (``client.fs.readTextFile``), the response's
  ``protocolVersion``, ``agentCapabilities`` (``agent.promptCapabilities.image``) and the ids
  of its ``authMethods``; in v2 both sides call them ``capabilities``. ``_meta`` is left out
  (it is free-form). A drift is a path whose value differs, or that one side has and the
  other has not; the threshold is how many drifts are allowed.
- Peer values are data: they are compared and shown as JSON text, never interpreted.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from acp_proxy.plural import counted
from acp_proxy.protocol.decode import json_or_none
from acp_proxy.protocol.latency import Call, duration_text, match_limit, percentile

__all__ = [
    "Drift", "Slowdown", "SlowdownLimit", "capabilities", "drifts", "gate_lines",
    "parse_slowdown", "slowdowns",
]  # fmt: skip

_LIMIT = re.compile(
    r"(?P<method>[^=]+)=(?P<statistic>max|p\d+(?:\.\d+)?):"
    r"(?:(?P<percent>\d+(?:\.\d+)?)%|\+?(?P<amount>\d+(?:\.\d+)?)(?P<unit>us|ms|s|m))"
)
_UNITS = {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
FORM = "METHOD=pN:PERCENT% or METHOD=pN:+DURATION, e.g. 'session/prompt=p95:20%'"


class FrameLike(Protocol):
    @property
    def method(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def raw(self) -> bytes | bytearray: ...


@dataclass(frozen=True, slots=True)
class SlowdownLimit:
    method: str
    statistic: str
    percent: float | None  # relative limit, or
    limit_ns: int | None  # absolute limit
    text: str

    def allowed(self, before_ns: int) -> int:
        if self.percent is not None:
            return round(before_ns * (1 + self.percent / 100))
        assert self.limit_ns is not None
        return before_ns + self.limit_ns


@dataclass(frozen=True, slots=True)
class Slowdown:
    """A (method, direction) whose statistic in B is over what the limit allows from A."""

    method: str
    direction: str
    statistic: str
    before_ns: int
    after_ns: int
    limit: str

    def sentence(self) -> str:
        change = (self.after_ns - self.before_ns) / self.before_ns * 100 if self.before_ns else 0
        return (
            f"{self.method} ({self.direction}) {self.statistic} {duration_text(self.before_ns)} -> "
            f"{duration_text(self.after_ns)} ({change:+.0f}%), more than {self.limit} allows"
        )


@dataclass(frozen=True, slots=True)
class Drift:
    path: str
    before: Any  # the value in A, or MISSING
    after: Any

    def sentence(self) -> str:
        return f"{self.path}: {_shown(self.before)} -> {_shown(self.after)}"


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "(absent)"})()


def _shown(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    return orjson.dumps(value).decode()


def parse_slowdown(text: str) -> SlowdownLimit:
    """``METHOD=STATISTIC:LIMIT`` (see the rules); ``ValueError`` in one line otherwise."""
    found = match_limit(_LIMIT, text, "slowdown limit", FORM)
    statistic = found["statistic"]
    percent = float(found["percent"]) if found["percent"] is not None else None
    limit = None if percent is not None else round(float(found["amount"]) * _UNITS[found["unit"]])
    return SlowdownLimit(found["method"].strip(), statistic, percent, limit, text.strip())


def _latencies(calls: Iterable[Call]) -> dict[tuple[str, str], list[int]]:
    groups: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        if call.latency_ns is not None:
            groups.setdefault((call.method, call.direction), []).append(call.latency_ns)
    for values in groups.values():
        values.sort()
    return groups


def _statistic(values: Sequence[int], statistic: str) -> int | None:
    if statistic == "max":
        return values[-1] if values else None
    return percentile(values, float(statistic[1:]))


def slowdowns(
    before: Iterable[Call], after: Iterable[Call], limits: Sequence[SlowdownLimit]
) -> list[Slowdown]:
    """Every (method, direction) and limit where B is slower than the limit allows."""
    a, b = _latencies(before), _latencies(after)
    found = []
    for key in sorted(a.keys() & b.keys()):
        method, direction = key
        for limit in limits:
            if not fnmatch.fnmatchcase(method, limit.method):
                continue
            was, now = _statistic(a[key], limit.statistic), _statistic(b[key], limit.statistic)
            if was is None or now is None or now <= limit.allowed(was):
                continue
            found.append(Slowdown(method, direction, limit.statistic, was, now, limit.text))
    return found


def _flatten(value: Any, prefix: str, into: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            if key != "_meta":
                _flatten(inner, f"{prefix}.{key}", into)
        return
    into[prefix] = value


def capabilities(frames: Iterable[FrameLike]) -> dict[str, Any]:
    """The capabilities the first ``initialize`` request and response declare (dotted paths)."""
    declared: dict[str, Any] = {}
    seen = set()
    for frame in frames:
        if frame.method != "initialize" or frame.kind not in ("request", "response"):
            continue
        if frame.kind in seen:
            continue
        seen.add(frame.kind)
        message = json_or_none(frame.raw)
        body = message.get("params" if frame.kind == "request" else "result") if isinstance(
            message, dict) else None  # fmt: skip
        if isinstance(body, dict):
            side = "client" if frame.kind == "request" else "agent"
            if "protocolVersion" in body:
                declared[f"{side}.protocolVersion"] = body["protocolVersion"]
            declares = body.get(f"{side}Capabilities", body.get("capabilities", {}))  # v1, v2
            _flatten(declares, side, declared)
            methods = body.get("authMethods")
            if side == "agent" and isinstance(methods, list):
                declared["agent.authMethods"] = sorted(
                    str(m.get("id")) for m in methods if isinstance(m, dict)
                )
        if seen == {"request", "response"}:
            break
    return declared


def drifts(before: dict[str, Any], after: dict[str, Any]) -> list[Drift]:
    """Every capability path whose value differs between A and B, or that one side lacks."""
    return [
        Drift(path, before.get(path, MISSING), after.get(path, MISSING))
        for path in sorted(before.keys() | after.keys())
        if before.get(path, MISSING) != after.get(path, MISSING)
        or (path in before) != (path in after)
    ]


def gate_lines(
    found: Sequence[Slowdown], drifted: Sequence[Drift], allowed: int | None
) -> list[str]:
    """The gates' words for the text report: each slowdown, then the drift if over."""
    lines = [f"latency regression: {slowdown.sentence()}" for slowdown in found]
    if allowed is not None and len(drifted) > allowed:
        lines.append(
            f"capability drift: {counted(len(drifted), 'capability', 'capabilities')} changed, "
            f"{allowed} allowed"
        )
        lines += [f"  {drift.sentence()}" for drift in drifted]
    return lines
