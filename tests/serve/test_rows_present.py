"""The sans-I/O pieces of the inspector: the row index and how bytes are shown."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.serve.ui.present import segments
from acp_proxy.serve.ui.rows import RowIndex

KINDS = st.sampled_from(["agent_message_chunk", "agent_thought_chunk", "tool_call", None])
FRAME = st.tuples(st.sampled_from(["a2c", "c2a", "stderr"]), st.sampled_from(["s", "t"]),
                  KINDS, st.sampled_from(["m1", "m2", None]))  # fmt: skip


def frames(keys: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [(seq, *key) for seq, key in enumerate(keys, start=1)]


def rows_of(keys: list[tuple[object, ...]]) -> list[tuple[int, int, int]]:
    """The rows a plain reading of the rule gives: equal chunk keys in a row merge."""
    rows: list[tuple[int, int, int]] = []
    last = None
    for seq, direction, session, kind, message in frames(keys):
        key = (direction, session, kind, message) if kind and kind.endswith("_chunk") else None
        if key is not None and key == last:
            first, _, count = rows[-1]
            rows[-1] = (first, seq, count + 1)
        else:
            rows.append((seq, seq, 1))
        last = key
    return rows


@given(st.lists(FRAME, max_size=60), st.lists(st.integers(1, 20), max_size=10))
def test_the_index_is_the_same_however_it_is_fed(keys: list, steps: list[int]) -> None:
    index = RowIndex()
    fed = frames(keys)
    position = 0
    for step in steps:
        index.feed(fed[position : position + step])
        position += step
    index.feed(fed[position:])
    assert [index.row(i) for i in range(len(index))] == rows_of(keys)
    assert index.scanned_seq == len(keys)
    for seq in range(1, len(keys) + 1):
        found = index.find(seq)
        assert found is not None
        first, last, _ = index.row(found)
        assert first <= seq <= last


def test_a_run_needs_the_same_message_and_kind() -> None:
    index = RowIndex()
    index.feed([
        (1, "a2c", "s", "agent_message_chunk", "m"), (2, "a2c", "s", "agent_message_chunk", "m"),
        (3, "a2c", "s", "agent_message_chunk", "n"), (4, "a2c", "s", "agent_thought_chunk", "n"),
        (5, "a2c", "s", "tool_call", None), (6, "a2c", "s", "tool_call", None),
        (7, "stderr", None, None, None),
    ])  # fmt: skip
    assert [index.row(i) for i in range(len(index))] == [
        (1, 2, 2), (3, 3, 1), (4, 4, 1), (5, 5, 1), (6, 6, 1), (7, 7, 1),
    ]  # fmt: skip
    assert index.find(8) is None


ESCAPE = re.compile(r"(\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\n|\\r|\\t)+")


@given(st.binary(max_size=200))
def test_bytes_become_text_and_visible_escapes(raw: bytes) -> None:
    parts = segments(raw)
    for text, escaped in parts:
        assert text
        if escaped:
            assert ESCAPE.fullmatch(text), text
        else:
            assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)
            assert not any(0xDC80 <= ord(c) <= 0xDCFF for c in text)  # no lone surrogate
    plain = "".join(t for t, escaped in parts if not escaped)
    if all(not e for _, e in parts):
        assert plain.encode() == raw


def test_invalid_utf8_and_terminal_escapes() -> None:
    assert segments(b"ok \xff\xfe\x1b[31m\n") == [("ok ", False), ("\\xff\\xfe\\x1b", True),
                                                 ("[31m", False), ("\\n", True)]  # fmt: skip
    assert segments("café ✓".encode()) == [("café ✓", False)]
