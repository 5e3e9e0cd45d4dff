"""Sans-I/O. Counted nouns in the proxy's own words: ``1 frame``, ``2 frames``, ``0 turns``.

Rules:
- Dependency-free, so that any layer (engines included) can say how many of something it saw.
- One is singular, every other count (zero included) plural; the plural is the noun plus ``s``
  unless it is given (``counted(n, "entry", "entries")``).
- The count is written as given (an ``int``); thousands separators are the caller's choice
  through ``grouped=True``.
"""

from __future__ import annotations

__all__ = ["counted", "noun"]


def noun(count: int, singular: str, plural: str | None = None) -> str:
    """The noun alone, in the number ``count`` asks for."""
    if count == 1:
        return singular
    return plural if plural is not None else singular + "s"


def counted(count: int, singular: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``count`` and its noun: ``counted(1, "turn")`` is ``1 turn``, ``counted(3, "turn")``
    ``3 turns``."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun(count, singular, plural)}"
