"""Sans-I/O: finding and replacing a JSON-RPC ``id`` in a frame's bytes, leaving the rest as is.

Rules:
- ``id_span(raw)`` is the byte span of the value of the top-level ``"id"`` member of a JSON
  object line, found by a scanner that skips every other member's value (strings with their
  escapes, nested objects and arrays) without parsing it. None when the line is not an object
  or has no top-level ``id`` (a key spelt with escapes, e.g. ``"\\u0069d"``, is decoded).
- ``with_id(raw, new)`` replaces exactly that span with ``new`` (the id bytes the live client
  sent, so ``1``, ``1.0`` and ``"1"`` come back exactly as written); every other byte, the
  newline included, stays identical. A line without an id comes back unchanged.
- Never raises on peer bytes; pure, no I/O.
"""

from __future__ import annotations

import json
import re

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SPACE = re.compile(rb"[ \t\r\n]*")
_SCALAR = re.compile(rb"[^,}\]\s]+")
_NESTED = re.compile(rb'[\[\]{}"]')


def id_span(raw: bytes) -> tuple[int, int] | None:
    """The span of the top-level ``id`` value of a JSON object line (see module rules)."""
    try:
        return _member_span(raw, b"id")
    except (IndexError, ValueError):
        return None


def with_id(raw: bytes, new: bytes) -> bytes:
    """``raw`` with its top-level id value replaced by ``new``, byte for byte otherwise."""
    span = id_span(raw)
    if span is None:
        return raw
    start, end = span
    return raw[:start] + new + raw[end:]


def _member_span(raw: bytes, name: bytes) -> tuple[int, int] | None:
    at = _SPACE.match(raw, 0).end()  # type: ignore[union-attr]
    if raw[at : at + 1] != b"{":
        return None
    at += 1
    while True:
        at = _SPACE.match(raw, at).end()  # type: ignore[union-attr]
        if raw[at : at + 1] != b'"':
            return None  # "}" (no such member) or not JSON
        key = _STRING.match(raw, at)
        if key is None:
            return None
        text = key.group()[1:-1]
        if b"\\" in text:
            text = json.loads(key.group()).encode()
        at = _SPACE.match(raw, key.end()).end()  # type: ignore[union-attr]
        if raw[at : at + 1] != b":":
            return None
        start = _SPACE.match(raw, at + 1).end()  # type: ignore[union-attr]
        end = _skip_value(raw, start)
        if text == name:
            return start, end
        at = _SPACE.match(raw, end).end()  # type: ignore[union-attr]
        if raw[at : at + 1] != b",":
            return None
        at += 1


def _skip_value(raw: bytes, at: int) -> int:
    first = raw[at : at + 1]
    if first == b'"':
        found = _STRING.match(raw, at)
        if found is None:
            raise ValueError("unterminated string")
        return found.end()
    if first in (b"{", b"["):
        depth = 0
        position = at
        while True:
            token = _NESTED.search(raw, position)
            if token is None:
                raise ValueError("unterminated value")
            char = token.group()
            if char == b'"':
                found = _STRING.match(raw, token.start())
                if found is None:
                    raise ValueError("unterminated string")
                position = found.end()
                continue
            depth += 1 if char in (b"{", b"[") else -1
            position = token.end()
            if depth == 0:
                return position
    found = _SCALAR.match(raw, at)
    if found is None:
        raise ValueError("no value")
    return found.end()
