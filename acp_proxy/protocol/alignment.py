"""Sans-I/O: two recordings' messages aligned, and the fields in which two messages differ.

Rules:
- Alignment works on what ``diffing`` compares (the normalized text of each message, one
  direction at a time): the longest matching blocks are kept side by side, so a message only
  one side has shows as added or removed instead of shifting every message after it.
- Field changes walk both JSON values together and list every path whose value differs (a key
  only one side has, a different scalar, a different array length), at most ``limit`` of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any, TypeVar

T = TypeVar("T")
MISSING = object()


def align(left: Sequence[str], right: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Pairs of indexes into ``left`` and ``right`` (None: no counterpart on that side)."""
    matcher = SequenceMatcher(None, list(left), list(right), autojunk=False)
    pairs: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(i1 + k, j1 + k) for k in range(i2 - i1)]
            continue
        common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        pairs += [(i1 + k, j1 + k) for k in range(common)]
        pairs += [(i, None) for i in range(i1 + common, i2)]
        pairs += [(None, j) for j in range(j1 + common, j2)]
    return pairs


def changes(x: Any, y: Any, limit: int = 50) -> list[tuple[str, Any, Any]]:
    """``(path, value in x, value in y)`` for every differing leaf; a missing side is None
    in the value and named by ``present`` below."""
    out: list[tuple[str, Any, Any]] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                walk(a.get(key, MISSING), b.get(key, MISSING), f"{path}.{key}")
            return
        if isinstance(a, list) and isinstance(b, list):
            for index in range(max(len(a), len(b))):
                walk(a[index] if index < len(a) else MISSING,
                     b[index] if index < len(b) else MISSING, f"{path}[{index}]")  # fmt: skip
            return
        if a is MISSING and b is MISSING:
            return
        if type(a) is not type(b) or a != b:
            out.append((path, a, b))

    walk(x, y, "$")
    return out


def present(value: Any) -> bool:
    """Whether a value from ``changes`` was there (False: that side has no such field)."""
    return value is not MISSING
