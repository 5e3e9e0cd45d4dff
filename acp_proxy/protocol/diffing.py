"""Sans-I/O: compare two recorded conversations message by message; find the first divergence.

Rules:
- Only protocol frames are compared (``c2a`` and ``a2c``); agent stderr is log text, not
  protocol, and is left out. Each direction is compared as its own sequence, because the
  interleaving of the two directions depends on timing (a response and its update may come in
  either order) while each side's own order does not.
- Normal mode compares ``normalize.Normalizer`` output (canonical JSON); frames that are not
  JSON are compared by their bytes. ``strict`` compares raw bytes, newline included.
- The first divergence is the earliest differing position (by ``seq`` in A, then B), with the
  messages before it in that direction as context and the first differing JSON path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from acp_proxy.protocol.decode import json_or_none
from acp_proxy.protocol.normalize import Normalizer, canonical
from acp_proxy.protocol.observer import FrameLike

DIRECTIONS = ("c2a", "a2c")
CONTEXT = 3


@dataclass(frozen=True, slots=True)
class Item:
    seq: int
    direction: str
    index: int  # position among this direction's messages, from 0
    text: str  # what is compared: canonical JSON, or the raw bytes as text in strict mode
    value: Any  # the normalized message (None when not JSON or strict)


@dataclass(frozen=True, slots=True)
class Divergence:
    direction: str
    index: int
    a: Item | None  # None: A has no message there (it is shorter)
    b: Item | None
    context: tuple[Item, ...]  # the messages before it (from A)
    path: str | None  # first differing JSON path, when both are JSON


@dataclass(frozen=True, slots=True)
class Diff:
    counts: dict[str, tuple[int, int]]  # direction -> (messages in A, in B)
    divergence: Divergence | None

    @property
    def equal(self) -> bool:
        return self.divergence is None


def items(
    records: Iterable[FrameLike], *, strict: bool, ignore: Sequence[str] = ()
) -> dict[str, list[Item]]:
    """The comparable messages of one recording, per direction."""
    normalizer = Normalizer(ignore)
    out: dict[str, list[Item]] = {d: [] for d in DIRECTIONS}
    for record in records:
        direction = str(record.direction)
        if direction not in out:
            continue
        index = len(out[direction])
        if strict:
            out[direction].append(Item(record.seq, direction, index, _raw(record.raw), None))
            continue
        parsed = json_or_none(record.raw)
        if parsed is None and record.raw.strip() != b"null":  # not JSON, or too deep to walk
            out[direction].append(Item(record.seq, direction, index, _raw(record.raw), None))
            continue
        sender = "client" if direction == "c2a" else "agent"
        value = normalizer.message(sender, parsed)
        out[direction].append(Item(record.seq, direction, index, canonical(value).decode(), value))
    return out


def _raw(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", "backslashreplace")


def compare(a: dict[str, list[Item]], b: dict[str, list[Item]]) -> Diff:
    counts = {d: (len(a[d]), len(b[d])) for d in DIRECTIONS}
    found: list[Divergence] = []
    for direction in DIRECTIONS:
        left, right = a[direction], b[direction]
        for index in range(max(len(left), len(right))):
            x = left[index] if index < len(left) else None
            y = right[index] if index < len(right) else None
            if x is None or y is None or x.text != y.text:
                path = (
                    first_difference(x.value, y.value) if x and y and x.value is not None else None
                )
                context = tuple(left[max(0, index - CONTEXT) : index])
                found.append(Divergence(direction, index, x, y, context, path))
                break
    if not found:
        return Diff(counts, None)
    first = min(found, key=lambda d: (d.a.seq if d.a else 2**62, d.b.seq if d.b else 2**62))
    return Diff(counts, first)


def first_difference(x: Any, y: Any, path: str = "$") -> str | None:
    """The first JSON path where ``x`` and ``y`` differ (None when equal)."""
    if isinstance(x, dict) and isinstance(y, dict):
        for key in sorted(set(x) | set(y)):
            if key not in x or key not in y:
                return f"{path}.{key}"
            found = first_difference(x[key], y[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(x, list) and isinstance(y, list):
        for index, (p, q) in enumerate(zip(x, y, strict=False)):
            found = first_difference(p, q, f"{path}[{index}]")
            if found is not None:
                return found
        return None if len(x) == len(y) else f"{path}[{min(len(x), len(y))}]"
    same = type(x) is type(y) and x == y
    return None if same else path
