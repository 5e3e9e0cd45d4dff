"""The SSE reader: events out of any chunking, comments counted, lines bounded."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.sse import SseEvent, SseReader, SseTooLong

STREAM = (
    b": keepalive\n\n"
    b'data: {"jsonrpc":"2.0","method":"session/update"}\n\n'
    b"event: message\r\nid: 7\r\ndata:first\r\ndata: second\r\n\r\n"
    b"data: \xc3\xa9t\xc3\xa9\r\r"
    b"retry: 10\n\n"
)
EVENTS = [
    SseEvent(b'{"jsonrpc":"2.0","method":"session/update"}'),
    SseEvent(b"first\nsecond", b"message", b"7"),
    SseEvent(b"\xc3\xa9t\xc3\xa9", None, b"7"),  # the last event id stays, as the standard says
]


def _read(chunks: list[bytes]) -> tuple[list[SseEvent], int]:
    reader = SseReader()
    events = [event for chunk in chunks for event in reader.feed(chunk)]
    return events, reader.comments


def test_events_and_comments() -> None:
    assert _read([STREAM]) == (EVENTS, 1)


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert _read(chunks) == (EVENTS, 1)


@given(st.binary(max_size=300))
def test_any_bytes_read_without_raising(data: bytes) -> None:
    SseReader().feed(data)


def test_a_line_past_the_bound_is_refused() -> None:
    reader = SseReader(max_line=10)
    reader.feed(b"data: 1234")
    with pytest.raises(SseTooLong):
        reader.feed(b"56789")


def _reference(stream: bytes) -> list[SseEvent]:
    """The HTML standard's event stream interpretation, line by line, the whole stream at once
    (as the reader treats it: a CR at the very end ends its line)."""
    events: list[SseEvent] = []
    data: list[bytes] = []
    name: bytes | None = None
    last_id: bytes | None = None
    lines = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    for line in lines[:-1]:
        if not line:
            if data:
                events.append(SseEvent(b"\n".join(data), name, last_id))
            data, name = [], None
            continue
        if line.startswith(b":"):
            continue
        field, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value
        elif field == b"id":
            last_id = value
    return events


_PIECES = st.sampled_from([
    b'data: {"jsonrpc":"2.0","method":"session/update"}\n\n', b"data: x\n\n", b"data: \n\n",
    b"data: a\r\n\r\n", b"data:b\n\n", b"data: c\ndata: d\n\n", b": keepalive\n\n", b"\n",
    b"event: message\n", b"id: 9\n", b"retry: 5\n", b"data: e\r\r", b"data: f", b"\r", b"\n\n",
])  # fmt: skip


@given(st.lists(_PIECES, max_size=30), st.lists(st.integers(min_value=0), max_size=8))
def test_the_fast_paths_read_as_the_standard_says(pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    points = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(points)]
    expected = _reference(stream)
    events = _read(chunks)[0]
    assert events == expected
    reader = SseReader()
    assert [data for chunk in chunks for data in reader.feed_data(chunk)] == [
        event.data for event in expected
    ]


def test_a_plain_event_past_the_bound_is_refused() -> None:
    with pytest.raises(SseTooLong):
        SseReader(max_line=10).feed(b"data: 12345\n\ndata: 1\n\n")
