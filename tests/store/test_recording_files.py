"""Recording files are read in bounded lines: a line past the bound is refused, never held."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from acp_proxy.errors import UnreadableRecording
from acp_proxy.store import recording_files

BOUND = 1 << 20


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recording_files, "MAX_LINE_BYTES", BOUND, raising=False)
    monkeypatch.setattr(recording_files, "_PIECE", 64 << 10, raising=False)


@pytest.mark.usefixtures("small_bound")
@pytest.mark.parametrize("ending", [b"", b"\n"])
def test_a_line_longer_than_the_bound_is_refused_holding_no_more_than_it(
    tmp_path: Path, ending: bytes
) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * (8 * BOUND) + ending)
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableRecording, match=r"long.jsonl: line 2 is longer than"):
            list(recording_files.frames_lines(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * BOUND


@pytest.mark.usefixtures("small_bound")
def test_lines_up_to_the_bound_come_back_exactly(tmp_path: Path) -> None:
    lines = [b"a\n", b"b" * (BOUND - 1) + b"\n", b"\n", b"c" * 70_000 + b"\r\n", b"no end"]
    path = tmp_path / "ok.jsonl"
    path.write_bytes(b"".join(lines))
    assert list(recording_files.frames_lines(path)) == lines
    path.write_bytes(b"b" * BOUND + b"\n")  # the newline makes it one byte too long
    with pytest.raises(UnreadableRecording, match="line 1 is longer"):
        list(recording_files.frames_lines(path))
