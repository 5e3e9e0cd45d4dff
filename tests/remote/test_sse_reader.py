"""The SSE reader: events from any split of the stream, data byte for byte."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.remote.sse_reader import SseReader

STREAM = (
    b": keepalive\n\n"
    b'data: {"id":1}\n\n'
    b"event: message\r\ndata:no-space\r\n\r\n"
    b"data: line one\rdata: line two\r\r"
    b"id: 7\nretry: 10\n\n"
    b'data: {"text":"caf\xc3\xa9 \\n"}\n\n'
    b"data: unterminated"
)
EVENTS = [b'{"id":1}', b"no-space", b"line one\nline two", b'{"text":"caf\xc3\xa9 \\n"}']


def read(chunks: list[bytes]) -> tuple[list[bytes], int]:
    reader = SseReader()
    events = [event for chunk in chunks for event in reader.feed(chunk)]
    reader.finish()
    return events, reader.comments


def test_the_events_of_a_stream() -> None:
    assert read([STREAM]) == (EVENTS, 1)


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(cuts)
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert read(chunks) == (EVENTS, 1)


@given(st.binary(max_size=300))
def test_any_bytes_are_read_without_raising(data: bytes) -> None:
    events, _ = read([data])
    assert all(isinstance(event, bytes) for event in events)
