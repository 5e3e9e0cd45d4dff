"""Sans-I/O: how deep a JSON text nests, and the value of one that nests too deep to walk.

Rules:
- ``WALK_DEPTH`` is the deepest nesting any part of acp-proxy walks: the redactor, the pretty
  printers, the transcript, the inspector and the JSON outputs (orjson writes no deeper than
  a few hundred levels; Python's recursion ends near a thousand frames). A text nesting
  deeper is *too deep*: it is valid or not like any other, but it is never walked.
- Everything here is iterative: a text of any depth is measured, checked and cut in time
  linear in its length, with no recursion and no parser's depth limit.
- Only brackets outside strings count; when there are not more brackets than ``WALK_DEPTH``
  in all, the text cannot be too deep and is not scanned (the common case, two counts in C).
  Otherwise ``too_deep`` still works in C: strings are cut out and innermost bracket pairs
  removed, one level a pass.
- ``bounded`` gives the value of a too-deep text with every value nested deeper than
  ``WALK_DEPTH`` replaced by the string ``DEEP_MARK``: the levels above (the JSON-RPC
  envelope, a method, a session id) read as they are; what is below is only in the bytes.
  It gives ``None`` when the text is not JSON at all (RFC 8259, checked token by token).
- Checking a text token by token is Python work: ``bounded`` takes at most ``CHECKED_BYTES``.
  A longer text that is too deep is not checked (``checkable`` says so): callers call it
  unparseable, which is what it is to every JSON parser.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

import orjson

WALK_DEPTH = 128
DEEP_MARK = "[nested too deep]"
CHECKED_BYTES = 256 << 10

_NOT_MARKS = bytes(range(256)).translate(None, b'[]{}"')  # every byte but brackets, quotes
_PARENTHESES = bytes.maketrans(b"[{]}", b"(())")
_STEP = bytes.maketrans(b"()", b"\x01\xff")
_TOKEN = re.compile(
    rb"[ \t\r\n]*(?:"
    rb'(?P<string>"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")'
    rb"|(?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    rb"|(?P<literal>true|false|null)"
    rb"|(?P<open>[\[{])|(?P<close>[\]}])|(?P<colon>:)|(?P<comma>,))"
)
_SPACE = re.compile(rb"[ \t\r\n]*")


def _brackets(text: bytes | bytearray) -> bytes:
    """The brackets of ``text`` outside its strings, as ``(`` and ``)``, all in C: escapes are
    dropped, then everything but quotes and brackets; two quotes side by side go (an empty
    string, or one string's end and the next one's start: what lies between stays inside a
    string), and of what is left every other quoted piece is inside a string."""
    plain = bytes(text)
    if b"\\" in plain:
        plain = plain.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = plain.translate(None, _NOT_MARKS).replace(b'""', b"")
    outside = b"".join(marks.split(b'"')[::2]) if b'"' in marks else marks
    return outside.translate(_PARENTHESES)


def nesting(text: bytes | bytearray) -> int:
    """How deep ``text`` nests (brackets inside strings aside); at most its bracket count."""
    brackets = text.count(b"[") + text.count(b"{")
    if brackets <= WALK_DEPTH:
        return brackets
    steps = _brackets(text).translate(_STEP)
    return max(accumulate((step if step < 128 else step - 256) for step in steps), default=0)


def too_deep(text: bytes | bytearray) -> bool:
    """Whether ``text`` nests deeper than ``WALK_DEPTH``.

    Each pass removes the innermost pairs of brackets, so after ``WALK_DEPTH`` passes a pair
    is left only where the text nests deeper (every pass runs in C).
    """
    if text.count(b"[") + text.count(b"{") <= WALK_DEPTH:
        return False
    brackets = _brackets(text)
    for _ in range(WALK_DEPTH):
        shorter = brackets.replace(b"()", b"")
        if len(shorter) == len(brackets):
            return False
        brackets = shorter
    return b"()" in brackets


def checkable(text: bytes | bytearray) -> bool:
    """Whether ``bounded`` takes ``text`` (it is at most ``CHECKED_BYTES`` long)."""
    return len(text) <= CHECKED_BYTES


def bounded(text: bytes | bytearray) -> Any:
    """The value of ``text`` cut at ``WALK_DEPTH`` (see the rules), or None if not JSON (or
    longer than ``CHECKED_BYTES``)."""
    if not checkable(text):
        return None
    cut = _cut(bytes(text))
    return None if cut is None else orjson.loads(cut)


def _cut(text: bytes) -> bytes | None:
    """``text`` checked as JSON and with every value below ``WALK_DEPTH`` replaced."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    mark = orjson.dumps(DEEP_MARK)
    out: list[bytes] = []
    kept = 0  # text[:kept] is settled in out
    stack: list[bytes] = []  # the open containers, b"[" or b"{"
    expect = "value"  # value, first (value or close), key, first-key, colon, after
    cut_at = -1  # where the value being replaced began
    at, end = 0, len(text)
    while True:
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            break
        at, kind = match.end(), match.lastgroup or ""
        start = match.start(kind)
        if kind == "close":
            wanted = b"[" if text[start] == ord("]") else b"{"
            if not stack or stack[-1] != wanted or expect not in ("after", "first", "first-key"):
                return None
            stack.pop()
            expect = "after"
            if len(stack) == WALK_DEPTH and cut_at >= 0:
                out += [text[kept:cut_at], mark]
                kept, cut_at = at, -1
        elif kind == "colon":
            if expect != "colon":
                return None
            expect = "value"
        elif kind == "comma":
            if expect != "after" or not stack:
                return None
            expect = "key" if stack[-1] == b"{" else "value"
        elif expect in ("key", "first-key"):
            if kind != "string":
                return None
            expect = "colon"
        elif expect not in ("value", "first"):
            return None
        elif kind == "open":
            if len(stack) == WALK_DEPTH and cut_at < 0:
                cut_at = start
            stack.append(text[start : start + 1])
            expect = "first" if stack[-1] == b"[" else "first-key"
        else:
            expect = "after"
        if not stack and expect == "after":
            break
    rest = _SPACE.match(text, at)
    if stack or expect != "after" or rest is None or rest.end() != end:
        return None
    return b"".join([*out, text[kept:]])
