"""LineSplitter: every byte kept, whatever the chunking; odd lines framed as they are."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.wire import Frame, LineSplitter

LITERAL_CASES = {
    "one line": b'{"jsonrpc":"2.0","method":"x"}\n',
    "crlf": b'{"a":1}\r\n{"b":2}\r\n',
    "empty lines": b"\n\n{}\n\n",
    "no final newline": b'{"a":1}\n{"b":',
    "invalid utf-8": b'{"a":"\xff\xfe"}\n\xc3\x28\n',
    "nul bytes": b'{"a":"\x00"}\n\x00\x00\n',
    "only a newline": b"\n",
    "nothing": b"",
}


def split_all(chunks: list[bytes]) -> tuple[list[Frame], Frame | None]:
    splitter = LineSplitter()
    frames = [frame for chunk in chunks for frame in splitter.feed(chunk)]
    return frames, splitter.finish()


def reassembled(frames: list[Frame], tail: Frame | None) -> bytes:
    return b"".join(f.raw for f in frames) + (tail.raw if tail else b"")


@pytest.mark.parametrize("data", LITERAL_CASES.values(), ids=LITERAL_CASES.keys())
@pytest.mark.parametrize("chunking", ["whole", "byte by byte"])
def test_literal_cases_keep_every_byte(data: bytes, chunking: str) -> None:
    chunks = [data] if chunking == "whole" else [data[i : i + 1] for i in range(len(data))]
    frames, tail = split_all(chunks)
    assert reassembled(frames, tail) == data
    assert all(f.raw.endswith(b"\n") and f.raw.count(b"\n") == 1 for f in frames)
    assert all(f.complete for f in frames)
    expected_lines = data.split(b"\n")
    assert [f.raw for f in frames] == [line + b"\n" for line in expected_lines[:-1]]
    if expected_lines[-1]:
        assert tail is not None
        assert tail.raw == expected_lines[-1]
        assert not tail.complete
    else:
        assert tail is None


def test_offsets_are_stream_positions() -> None:
    frames, tail = split_all([b"ab\ncd", b"e\n", b"\nxyz"])
    assert [(f.raw, f.offset) for f in frames] == [(b"ab\n", 0), (b"cde\n", 3), (b"\n", 7)]
    assert tail == Frame(b"xyz", 8, complete=False)


def test_huge_line_crossing_many_chunks() -> None:
    line = b'{"data":"' + b"x" * (64 * 1024 * 1024) + b'"}\n'
    splitter = LineSplitter()
    frames: list[Frame] = []
    step = 1 << 20
    for start in range(0, len(line), step):
        frames += splitter.feed(line[start : start + step])
        if start + step < len(line):
            assert splitter.pending_size == start + step
    assert len(frames) == 1
    assert frames[0].raw == line
    assert splitter.finish() is None


def test_feed_after_finish_is_local_misuse() -> None:
    splitter = LineSplitter()
    splitter.finish()
    with pytest.raises(RuntimeError):
        splitter.feed(b"x")
    with pytest.raises(RuntimeError):
        splitter.finish()


@given(
    data=st.binary(max_size=2000)
    | st.lists(st.sampled_from([b"{}", b"\n", b"\r\n", b"\xff", b"\x00", b'"a"']), max_size=80).map(
        b"".join
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=30),
)
def test_any_chunking_gives_back_the_input(data: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points)]
    frames, tail = split_all(chunks)
    assert reassembled(frames, tail) == data
    whole_frames, whole_tail = split_all([data])
    assert frames == whole_frames
    assert tail == whole_tail
    offset = 0
    for frame in [*frames, *([tail] if tail else [])]:
        assert frame.offset == offset
        offset += len(frame.raw)
