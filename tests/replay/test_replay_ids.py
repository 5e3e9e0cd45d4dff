"""Byte-level id rewriting (acp_proxy/replay_ids.py): the id changes, no other byte does."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.replay.ids import id_span, with_id

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


def test_examples() -> None:
    raw = b'{"jsonrpc":"2.0","id":2,"result":{"id":9,"s":"\\"id\\":1"}}\n'
    assert (
        with_id(raw, b'"abc"')
        == b'{"jsonrpc":"2.0","id":"abc","result":{"id":9,"s":"\\"id\\":1"}}\n'
    )
    tail = b'{"result":{"a":[1,{"id":3}]},"jsonrpc":"2.0", "id" : 1.0 }\r\n'
    assert with_id(tail, b"7") == b'{"result":{"a":[1,{"id":3}]},"jsonrpc":"2.0", "id" : 7 }\r\n'
    escaped = b'{"\\u0069d":4,"result":null}\n'
    assert with_id(escaped, b"5") == b'{"\\u0069d":5,"result":null}\n'
    for broken in (b"[1,2]\n", b"not json\n", b'{"a":1}\n', b'{"a":"unterminated\n', b""):
        assert with_id(broken, b"1") == broken


@given(
    st.dictionaries(st.text().filter(lambda k: k != "id"), json_values, max_size=4),
    st.integers(min_value=0, max_value=4),
    st.one_of(st.integers(), st.text(), st.floats(allow_nan=False, allow_infinity=False)),
    st.one_of(st.integers(), st.text()),
    st.booleans(),
)
def test_only_the_id_changes(
    members: dict[str, object], position: int, old: object, new: object, spaced: bool
) -> None:
    items = list(members.items())
    items.insert(min(position, len(items)), ("id", old))
    separators = (", ", ": ") if spaced else (",", ":")
    raw = json.dumps(dict(items), separators=separators, ensure_ascii=False).encode() + b"\n"
    span = id_span(raw)
    assert span is not None
    assert json.loads(raw[span[0] : span[1]]) == old
    new_bytes = json.dumps(new).encode()
    out = with_id(raw, new_bytes)
    assert out[: span[0]] == raw[: span[0]]
    assert out[span[0] + len(new_bytes) :] == raw[span[1] :]
    assert json.loads(out) == {**dict(items), "id": new}
