"""protocol/decode.py: the one JSON decoder never raises on peer bytes or stored columns."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.decode import column_value, json_object, json_or_none

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.binary())
def test_any_bytes_decode_or_give_none(data: bytes) -> None:
    value = json_or_none(data)
    object_value = json_object(data)
    assert object_value is None or isinstance(object_value, dict)
    if value is not None:
        assert json.loads(data) == value


@given(JSON)
def test_a_stored_column_decodes_to_what_was_written(value: object) -> None:
    assert column_value(json.dumps(value)) == value


def test_a_column_that_is_not_json_is_kept_as_text() -> None:
    assert column_value("not json {") == "not json {"
    assert column_value(None) is None
    assert column_value(7) == 7
    assert json_or_none(b"\xff{") is None
    assert json_object(b"[1]") is None
