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
