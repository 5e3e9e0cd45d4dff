"""Keeping a tool's result small enough for a model's context.

Rules:
- A result is a JSON object; serialized (orjson) it must not pass ``max_bytes``.
- A list result (``fit_items``) keeps as many whole items, in order, as fit, and says where
  the next page starts (``next``: the caller's cursor value of the first item left out);
  an item too large alone is cut down by ``shrink`` first.
- A long text (``cut_text``) is cut by its size as JSON (not its length: a character can take
  six bytes), at a character offset, and the result says the offset to ask for next.
- Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

DEFAULT_MAX_BYTES = 32 * 1024
MIN_MAX_BYTES = 4 * 1024


def size(value: Any) -> int:
    return len(orjson.dumps(value, default=str))


def fit_items(
    result: dict[str, Any],
    key: str,
    items: Sequence[dict[str, Any]],
    max_bytes: int,
    cursor: Callable[[dict[str, Any]], Any],
    shrink: Callable[[dict[str, Any], int], dict[str, Any]] | None = None,
    more: bool = False,
) -> dict[str, Any]:
    """``result`` with ``result[key]`` as many of ``items`` as fit, and ``next`` if any left.

    ``more``: there are items beyond ``items`` (a page limit was reached), so ``next`` is set
    even when all of ``items`` fit.
    """
    kept: list[dict[str, Any]] = []
    budget = max_bytes - size({**result, key: [], "next": None, "truncated": True}) - 16
    used = 0
    next_cursor = None
    for index, original in enumerate(items):
        item = original
        item_size = size(item) + 1
        if item_size > budget // 2 and shrink is not None:
            item = shrink(item, budget // 2)
            item_size = size(item) + 1
        if used + item_size > budget:
            next_cursor = cursor(items[index - 1]) if kept else None
            if not kept and shrink is not None:  # not even one fits: cut it to what is left
                kept.append(shrink(item, max(budget - 64, 256)))
                next_cursor = cursor(item) if index + 1 < len(items) else None
            break
        kept.append(item)
        used += item_size
    else:
        if more and kept:
            next_cursor = cursor(kept[-1])
    out = {**result, key: kept, "next": next_cursor}
    if next_cursor is not None:
        out["truncated"] = True
    return out


def cut_text(text: str, offset: int, max_bytes: int) -> tuple[str, int | None]:
    """``text[offset:]`` cut so that it takes at most ``max_bytes`` as a JSON string (quotes,
    escapes and UTF-8 counted: a character can take up to six); and the offset to continue
    at (None: the end)."""
    count = min(max_bytes, len(text) - offset)
    while count > 0 and size(text[offset : offset + count]) > max_bytes:
        taken = size(text[offset : offset + count])
        count = min(count - 1, count * max_bytes // taken)
    if count <= 0 and offset < len(text):
        count = 1  # always move on, even when one character is wider than the budget
    end = offset + max(count, 0)
    return text[offset:end], (end if end < len(text) else None)


def shrink_value(value: Any, max_bytes: int) -> Any:
    """A JSON value cut down to about ``max_bytes``: long strings cut, long lists shortened."""
    if size(value) <= max_bytes:
        return value
    if isinstance(value, str):
        keep = max(max_bytes - 40, 16)
        return value[:keep] + f"… [{len(value) - keep} more characters]"
    if isinstance(value, list):
        out: list[Any] = []
        share = max(max_bytes // max(len(value), 1), 64)
        for item in value:
            if size(out) + share > max_bytes:
                out.append(f"… [{len(value) - len(out)} more items]")
                break
            out.append(shrink_value(item, share))
        return out
    if isinstance(value, dict):
        share = max(max_bytes // max(len(value), 1), 64)
        return {k: shrink_value(v, share) for k, v in value.items()}
    return value
