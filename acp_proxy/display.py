"""Sans-I/O: recorded text made safe to show, by ``visible``, the one function every output calls.

Rules:
- The ground floor: every layer (inspect/, check/, share/, serve/, cli/, stderr.py) imports
  this module, and it imports nothing of the project.
- Recorded text is data. Before any of it reaches a terminal (``show``, ``tail``, ``ls``,
  ``stats``, ``check``, ``diff``, the demo summary, the proxy's own stderr lines, Markdown and
  HTML written to stdout), every character a terminal or a text renderer would act on is
  replaced by a visible escape: C0 controls (ESC, BEL, CR, backspace ...), DEL, C1 controls
  (CSI and OSC as single code points), the line and paragraph separators and the bidirectional
  overrides and isolates (text that reads one way and runs another). The escape is Python's
  spelling (``\\x1b``, ``\\u202e``), so a reader can tell what was there.
- JSON that may reach a terminal (``show --json``, ``export --format jsonl``, ``redact``,
  reports) is passed through ``json_visible``/``json_line``: the characters JSON leaves raw
  are written as JSON escapes, so the document parses back to the very same values (a
  frame's ``raw`` stays byte for byte what was recorded) while a terminal sees only ASCII.
- ``lines=True`` keeps newlines and tabs (multi-line output: reports, fenced blocks); one-line
  output (the default) escapes them too, so one frame stays one line.
- Nothing else changes: printable text, emoji and their joiners pass as they are, and text
  with nothing to escape is returned unchanged without being copied.
- Styling (ANSI colour) is applied after this, by the renderer, to text already made visible;
  whether colour reaches the terminal is decided where output is written (cli/).
"""

from __future__ import annotations

import re

_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_UNSAFE_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character shown as an escape (see the module rules)."""
    if text.isprintable():  # the common case, checked in C: nothing to replace
        return text
    return (_UNSAFE_BUT_LINES if lines else _UNSAFE).sub(_escape, text)


def is_visible(text: str, *, lines: bool = False) -> bool:
    """Whether ``visible`` would leave ``text`` as it is."""
    return (_UNSAFE_BUT_LINES if lines else _UNSAFE).search(text) is None


_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f{_BIDI_AND_SEPARATORS}]")


def json_visible(document: str) -> str:
    """JSON text with the characters JSON leaves raw (DEL, C1, bidi) written as ``\\uXXXX``.

    The value is the same (JSON reads the escape back as the character); the terminal only
    sees ASCII escapes. C0 controls are escaped by every JSON encoder already.
    """
    if document.isascii() and "\x7f" not in document:  # DEL is ASCII but a control
        return document
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def json_line(document: bytes) -> bytes:
    """``json_visible`` for encoded JSON (a JSONL line): the same values, no raw controls."""
    if document.isascii() and b"\x7f" not in document:
        return document
    return json_visible(document.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")
