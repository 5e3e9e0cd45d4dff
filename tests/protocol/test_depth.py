"""protocol/depth.py and the classification of deep JSON: measured, checked and cut without
recursion, so JSON nested without limit is a message like any other and never walked."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.decode import json_or_none
from acp_proxy.protocol.depth import DEEP_MARK, WALK_DEPTH, bounded, nesting, too_deep
from acp_proxy.protocol.jsonrpc import Kind, classify_value, decode, decode_for_reading

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)  # fmt: skip


def deep(levels: int, inner: str = '"x"') -> bytes:
    """A notification whose params nest ``levels`` arrays deep (and objects every third)."""
    opened = "".join('{"k":' if i % 3 == 2 else "[" for i in range(levels))
    closed = "".join("}" if i % 3 == 2 else "]" for i in reversed(range(levels)))
    return (
        f'{{"jsonrpc":"2.0","method":"x/deep","params":{{"v":{opened}{inner}{closed}}}}}'.encode()
    )


def _depth(value: Any) -> int:
    most, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            most = max(most, level)
            todo += [(v, level + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return most


@given(JSON)
def test_shallow_json_is_measured_and_kept(value: Any) -> None:
    text = orjson.dumps(value)
    assert nesting(text) >= _depth(value)
    assert not too_deep(text)
    assert json_or_none(text) == value


@given(JSON, st.integers(min_value=WALK_DEPTH + 1, max_value=WALK_DEPTH * 4))
def test_deep_json_keeps_its_top_and_loses_only_what_is_too_deep(value: Any, levels: int) -> None:
    nested = ("[" * levels + "1" + "]" * levels).encode()
    text = b'{"top":' + orjson.dumps(value) + b',"deep":' + nested + b"}"
    assert too_deep(text)
    assert json_or_none(text) is None
    cut = bounded(text)
    assert cut["top"] == value or _depth(value) + 1 > WALK_DEPTH
    assert _depth(cut) <= WALK_DEPTH
    innermost = cut["deep"]
    while isinstance(innermost, list):
        innermost = innermost[0]
    assert innermost == DEEP_MARK


@given(st.text(alphabet='[]{}:,"\\ ant1e0.-', max_size=40))
def test_what_counts_as_json_is_what_json_says(text: str) -> None:
    """bounded() checks JSON token by token: it agrees with the standard parser."""
    raw = (("[" * (WALK_DEPTH + 1)) + text + ("]" * (WALK_DEPTH + 1))).encode()
    try:
        json.loads(raw, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
        valid = True
    except (ValueError, RecursionError):
        valid = False
    assert (bounded(raw) is not None) == valid


@pytest.mark.parametrize("levels", [300, 1100, 50_000])
def test_valid_deep_frames_are_messages_not_bad_json(levels: int) -> None:
    for parse in (decode, decode_for_reading):
        value, failure = parse(deep(levels))
        assert failure is None
        assert classify_value(value).kind is Kind.NOTIFICATION
    value, _ = decode_for_reading(deep(levels))  # what readers walk
    assert _depth(value) <= WALK_DEPTH


@pytest.mark.parametrize(
    "broken",
    [
        deep(2000)[:-1],
        deep(2000).replace(b'"x"', b"x"),
        deep(2000) + b"]",
        deep(2000).replace(b'"x"', b'"\xff"'),
    ],
)
def test_broken_deep_frames_are_unparseable(broken: bytes) -> None:
    for parse in (decode, decode_for_reading):
        value, failure = parse(broken)
        assert value is None
        assert failure is not None
        assert failure.bad_utf8 == (b"\xff" in broken)


TRICKY = st.recursive(
    st.text(alphabet='[]{}"\\ax', max_size=6) | st.integers(0, 9),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(alphabet='[]{}"\\k', max_size=3), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


@given(TRICKY, st.integers(min_value=0, max_value=WALK_DEPTH + 4))
def test_too_deep_sees_through_brackets_quotes_and_escapes_in_strings(
    value: Any, extra: int
) -> None:
    text = b"[" * extra + orjson.dumps(value) + b"]" * extra
    assert too_deep(text) == (_depth(value) + extra > WALK_DEPTH)


def test_a_deep_frame_too_long_to_check_is_unparseable_not_a_stall() -> None:
    """Checking token by token is bounded: past CHECKED_BYTES a too-deep line is not checked."""
    from acp_proxy.protocol.depth import CHECKED_BYTES

    huge = deep(CHECKED_BYTES // 2 + 10)
    assert len(huge) > CHECKED_BYTES
    for parse in (decode, decode_for_reading):
        value, failure = parse(huge)
        assert value is None
        assert failure is not None
        assert "too deep" in failure.reason
        assert not failure.bad_utf8
