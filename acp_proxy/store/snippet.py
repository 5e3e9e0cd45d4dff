"""Sans-I/O. A search hit's snippet cut from the frame's own JSON, the matches marked.

Rules:
- The index holds a frame's values as words (database.py's ``frame_text``), but a person
  reading a hit wants the JSON the words came from: ``{"method":"session/new",...}``, not
  ``1 session/new /home/user``. So the snippet is cut from the frame's JSON text: its recorded
  line when it is no JSON object or array (or one nested too deep to write again), else that
  value written again compactly (orjson: no spaces, non-ASCII as itself), so that a match is
  found however the peer spaced or escaped it.
- A full-text match is found as the index finds it: the pattern's words in a row, each
  whole but the last (a prefix), ignoring case and accents, anything that is no letter or
  digit (a JSON escape such as ``\\n`` included) between them.
- Bounded: only the first ``SEARCHED_CHARS`` characters are looked at, and the pattern is
  built from escaped literals (no user syntax), so a huge or crafted frame costs little.
  Nothing found there: ``None``, and the caller keeps the index's own snippet.
- The snippet holds up to ``CONTEXT_CHARS`` characters on each side of the first match, with
  every match inside it between ``values.MARK_START`` and ``values.MARK_END``; ``…`` says
  that text was left out.
"""

from __future__ import annotations

import re
import unicodedata

import orjson

from acp_proxy.store.values import MARK_END, MARK_START

__all__ = ["CONTEXT_CHARS", "SEARCHED_CHARS", "json_snippet", "phrase_pattern"]

CONTEXT_CHARS = 80
SEARCHED_CHARS = 1 << 16
ELLIPSIS = "…"
_WORDS = re.compile(r"[^\W_]+")
_ESCAPE = r"\\(?:[nrtbf]|u[0-9a-fA-F]{4})"
_BETWEEN = rf"(?:[\W_]|{_ESCAPE})+"
_WORD_START = r"(?:(?<![^\W_])|(?<=\\[nrtbf]))"


def _fold(char: str) -> str:
    """One character without its accent and case, still one character (indexes line up)."""
    base = unicodedata.normalize("NFD", char)[:1] or char
    return base.lower()[:1] or base


def fold(text: str) -> str:
    return "".join(_fold(c) if not c.isascii() else c.lower() for c in text)


def phrase_pattern(pattern: str) -> re.Pattern[str] | None:
    """The full-text pattern's words in a row (see the rules), or None if it has no word."""
    words = [re.escape(fold(w)) for w in _WORDS.findall(pattern)]
    if not words:
        return None
    whole = [f"{w}(?![^\\W_])" for w in words[:-1]] + [words[-1]]
    return re.compile(_WORD_START + _BETWEEN.join(whole))


def json_text(raw: bytes) -> str:
    """The frame as JSON text: compact when it parses as an object or array, else as recorded."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict | list):
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # nested deeper than orjson writes: the line as recorded
            pass
    return raw.decode("utf-8", "replace").rstrip("\r\n")


def json_snippet(raw: bytes, pattern: re.Pattern[str], *, folded: bool = True) -> str | None:
    """The snippet of ``raw`` around the matches of ``pattern`` (see the rules), or None."""
    whole = json_text(raw)
    text = whole[:SEARCHED_CHARS]
    haystack = fold(text) if folded else text
    spans = [m.span() for m in pattern.finditer(haystack) if m.end() > m.start()]
    if not spans:
        return None
    first_start = spans[0][0]
    start = max(0, first_start - CONTEXT_CHARS)
    end = min(len(text), spans[0][1] + CONTEXT_CHARS)
    pieces = [ELLIPSIS] if start > 0 else []
    at = start
    for span_start, span_end in spans:
        if span_start < at or span_end > end:
            continue
        pieces += [text[at:span_start], MARK_START, text[span_start:span_end], MARK_END]
        at = span_end
    pieces.append(text[at:end])
    if end < len(whole):
        pieces.append(ELLIPSIS)
    return "".join(pieces)
