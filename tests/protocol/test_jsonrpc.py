"""classify(): every byte string becomes a message value; ids keep their JSON type."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol import jsonrpc
from acp_proxy.protocol.jsonrpc import (
    Batch,
    Correlator,
    ErrorResponse,
    Invalid,
    Kind,
    Notification,
    Request,
    Response,
    Unparseable,
    classify,
    classify_value,
    id_key,
)


def test_request_keeps_id_type() -> None:
    number = classify(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
    text = classify(b'{"jsonrpc":"2.0","id":"1","method":"initialize","params":{}}\n')
    assert isinstance(number, Request)
    assert isinstance(text, Request)
    assert number.id == 1
    assert text.id == "1"
    assert id_key(number.id) != id_key(text.id)
    assert id_key(1) != id_key(1.0)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'{"jsonrpc":"2.0","method":"session/update","params":{}}', Kind.NOTIFICATION),
        (b'{"jsonrpc":"2.0","id":0,"result":null}', Kind.RESPONSE),
        (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}', Kind.ERROR),
        (b'{"jsonrpc":"2.0","id":3,"result":{}}\r\n', Kind.RESPONSE),
        (b"[]", Kind.BATCH),
        (b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]', Kind.BATCH),
        (b'{"hello":1}', Kind.INVALID),
        (b"42", Kind.INVALID),
        (b'{"jsonrpc":"2.0","id":true,"method":"x"}', Kind.INVALID),
        (b'{"jsonrpc":"2.0","id":{"a":1},"result":1}', Kind.INVALID),
        (b'{"jsonrpc":"2.0","method":5}', Kind.INVALID),
        (b'{"jsonrpc":"2.0","id":1,"error":"bad"}', Kind.INVALID),
        (b'{"jsonrpc":"2.0","id":1}', Kind.INVALID),
        (b"not json\n", Kind.UNPARSEABLE),
        (b"\n", Kind.UNPARSEABLE),
        (b'{"a":1} trailing', Kind.UNPARSEABLE),
        (b'{"a":NaN}', Kind.UNPARSEABLE),
        (b'{"a":"\xff"}\n', Kind.UNPARSEABLE),
    ],
)
def test_kinds(raw: bytes, kind: Kind) -> None:
    assert classify(raw).kind is kind


def test_missing_jsonrpc_member_keeps_shape_but_is_flagged() -> None:
    message = classify(b'{"id":1,"method":"initialize"}')
    assert isinstance(message, Request)
    assert not message.jsonrpc_ok


def test_bad_utf8_is_told_apart_from_bad_json() -> None:
    bad_utf8 = classify(b'{"a":"\xc3\x28"}')
    bad_json = classify(b"{nope")
    assert isinstance(bad_utf8, Unparseable)
    assert bad_utf8.bad_utf8
    assert isinstance(bad_json, Unparseable)
    assert not bad_json.bad_utf8


def test_lone_surrogate_escape_is_still_json() -> None:
    # JSON's grammar allows it; orjson refuses it, the fallback parser accepts it.
    message = classify(b'{"jsonrpc":"2.0","method":"m","params":{"t":"\\ud800"}}')
    assert isinstance(message, Notification)


def test_batch_entries_are_classified_one_by_one() -> None:
    message = classify(b'[{"jsonrpc":"2.0","id":1,"method":"a"}, 7]')
    assert isinstance(message, Batch)
    assert [type(item) for item in message.items] == [Request, Invalid]
    empty = classify(b"[]")
    assert isinstance(empty, Batch)
    assert not empty.jsonrpc_ok


def test_error_keeps_fields_as_sent() -> None:
    message = classify(b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}')
    assert message == ErrorResponse(2, -32601, "nope", None)


def test_correlator_names_responses_per_side() -> None:
    correlator = Correlator()
    correlator.sent("client", 0, "initialize", 1)
    correlator.sent("agent", 0, "session/request_permission", 5)
    assert correlator.answered("agent", 0) is not None
    first = correlator.answered("client", 0)
    assert first is not None
    assert first.method == "initialize"
    assert correlator.answered("client", 0) is None
    correlator.sent("client", "7", "session/prompt", 9)
    assert correlator.answered("client", 7) is None
    assert correlator.outstanding() == 1


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.binary(max_size=300))
def test_any_bytes_classify_without_raising(raw: bytes) -> None:
    assert classify(raw).kind in set(Kind)


@given(json_values)
def test_any_json_value_classifies_without_raising(value: object) -> None:
    message = classify(json.dumps(value).encode())
    assert message.kind is not Kind.UNPARSEABLE


@given(
    st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(), st.none()),
    st.text(min_size=1),
)
def test_requests_round_trip_their_id(request_id: object, method: str) -> None:
    raw = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method}).encode()
    message = classify(raw)
    assert isinstance(message, Request)
    assert id_key(message.id) == id_key(request_id)  # type: ignore[arg-type]
    response = classify(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": 1}).encode())
    assert isinstance(response, Response)


# --- large frames: the skeleton parse ---------------------------------------------------------


def _emptied(value: object, min_string: int) -> object:
    """What a skeleton parse must give: long plain-ASCII strings without escapes emptied."""
    if isinstance(value, dict):
        return {key: _emptied(item, min_string) for key, item in value.items()}
    if isinstance(value, list):
        return [_emptied(item, min_string) for item in value]
    if isinstance(value, str):
        encoded = json.dumps(value)[1:-1]
        if len(encoded) + 1 > min_string and encoded.isascii() and "\\" not in encoded:
            return ""
    return value


def test_a_large_image_frame_is_parsed_as_a_skeleton() -> None:
    data = "A" * (2 * 1024 * 1024)
    raw = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"content":{"type":"image","data":"' + data.encode() + b'"},'
        b'"sessionUpdate":"agent_message_chunk","messageId":"m\\"1"}}}\n'
    )
    assert jsonrpc.skeleton(raw) is not None
    value, failure = jsonrpc.decode(raw)
    assert failure is None
    update = value["params"]["update"]
    assert update["sessionUpdate"] == "agent_message_chunk"
    assert update["messageId"] == 'm"1'
    assert update["content"]["data"] == ""


def test_skeleton_leaves_escaped_and_non_ascii_strings_to_the_full_parser() -> None:
    text = ('line \\"quoted\\" \\\\ end ' * 400).encode()
    assert jsonrpc.skeleton(b'{"a":"' + text + b'"}') is None  # nothing plain to leave out
    accents = ("é" * 5000).encode()
    assert jsonrpc.skeleton(b'{"a":"' + accents + b'"}') is None


def test_broken_large_frames_are_still_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonrpc, "SKELETON_MIN_SIZE", 10)
    monkeypatch.setattr(jsonrpc, "SKELETON_MIN_STRING", 10)
    assert classify(b'{"a":"' + b"x" * 50 + b'"').kind is Kind.UNPARSEABLE
    assert classify(b'{"a":"' + b"x" * 50 + b'"}}').kind is Kind.UNPARSEABLE
    assert classify(b'{"a":"' + b"x" * 50).kind is Kind.UNPARSEABLE


@given(json_values, st.integers(min_value=2, max_value=40))
def test_skeleton_parse_equals_full_parse_with_long_strings_emptied(
    value: object, min_string: int
) -> None:
    raw = json.dumps({"jsonrpc": "2.0", "method": "m", "params": value}).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonrpc, "SKELETON_MIN_SIZE", 0)
        patch.setattr(jsonrpc, "SKELETON_MIN_STRING", min_string)
        decoded, failure = jsonrpc.decode(raw)
    assert failure is None
    full = _as_orjson_reads(json.loads(raw))
    assert decoded in (full, _emptied(full, min_string))
    assert classify_value(decoded).kind is classify_value(full).kind


def _as_orjson_reads(value: object) -> object:
    """``value`` with integers wider than 64 bits as floats, which is how orjson reads them."""
    if isinstance(value, dict):
        return {key: _as_orjson_reads(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_orjson_reads(item) for item in value]
    wide = isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64
    return float(value) if wide else value


@given(st.integers() | st.floats(allow_nan=False, allow_infinity=False), st.booleans())
def test_an_id_stays_exactly_as_sent_however_wide(msg_id: int | float, batched: bool) -> None:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": "m"}
    raw = json.dumps([message] if batched else message).encode()
    decoded, failure = jsonrpc.decode(raw)
    assert failure is None
    entry = decoded[0] if batched else decoded
    assert type(entry["id"]) is type(msg_id)
    assert entry["id"] == msg_id


def test_an_id_wider_than_64_bits_is_answered_with_the_same_id() -> None:
    wide = 2**64 + 1
    request = jsonrpc.classify(b'{"jsonrpc":"2.0","id":%d,"method":"m"}' % wide)
    assert isinstance(request, jsonrpc.Request)
    assert request.id == wide
    assert isinstance(request.id, int)
