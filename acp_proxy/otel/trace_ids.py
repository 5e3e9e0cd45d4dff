"""Sans-I/O: trace and span ids derived from a connection's uid, and W3C ``traceparent`` values.

Rules:
- A connection's trace id is its uid when that is 32 hex digits (as the proxy makes them), else
  a hash of it; a span id is a hash of the uid and what the span stands for, so the same frames
  always give the same ids, live or a week later. Neither is ever 0 (invalid in OTLP).
- ``parse_traceparent`` accepts only a well-formed value (version 00 with exactly four parts,
  or a later version, never ff; non-zero ids) and gives None for anything else.
"""

from __future__ import annotations

import hashlib
from typing import Any

from acp_proxy.otel.span_values import SpanRef


def trace_id_of(uid: str) -> int:
    """The trace id of a connection: its uid when that is 32 hex digits, else a hash of it."""
    if len(uid) == 32:
        try:
            value = int(uid, 16)
        except ValueError:
            value = 0
        if value:
            return value
    return int.from_bytes(hashlib.blake2b(uid.encode(), digest_size=16).digest(), "big") or 1


def span_id_of(uid: str, key: str) -> int:
    digest = hashlib.blake2b(f"{uid}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") or 1


def parse_traceparent(value: Any) -> SpanRef | None:
    """The remote span of a W3C ``traceparent`` header value, or None if it is not valid."""
    if not isinstance(value, str):
        return None
    parts = value.strip().split("-")
    if len(parts) < 4 or [len(p) for p in parts[:4]] != [2, 32, 16, 2]:
        return None
    version, trace, span, flags = parts[:4]
    if version.lower() == "ff" or (version == "00" and len(parts) != 4):
        return None
    try:
        numbers = [int(part, 16) for part in (version, trace, span, flags)]
    except ValueError:
        return None
    if not numbers[1] or not numbers[2]:
        return None
    return SpanRef(numbers[1], numbers[2])
