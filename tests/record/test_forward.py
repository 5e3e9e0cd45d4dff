"""Forwarding (forward.py): a loop told to stop still passes on what its source already held,
and no more, whichever way the loop was waiting when the stop came."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from acp_proxy.protocol.acp import Direction
from acp_proxy.record import forward
from acp_proxy.record.tap import Tap

HELD = bytes(range(256)) * 200  # fits in a pipe's default capacity, so one write puts it all


class KeepingTap(Tap):
    """A tap that keeps what it is given, to compare with what was forwarded."""

    def __init__(self) -> None:
        super().__init__(os.open(os.devnull, os.O_WRONLY))
        self.kept = bytearray()

    def put_view(self, direction: Direction, mono_ns: int, chunk: memoryview) -> None:
        self.kept += chunk


@pytest.fixture
def stopped_source() -> Iterator[tuple[int, int, int]]:
    """A pipe holding HELD whose writer stays open (it could go on writing), and a stop pipe
    already written: the moment an agent has exited and the relay says stop."""
    source, writer = os.pipe()
    stop_read, stop_write = os.pipe()
    os.write(writer, HELD)
    os.write(stop_write, b"x")
    yield source, writer, stop_read
    for fd in (source, writer, stop_read, stop_write):
        os.close(fd)


def _pump_into(path: Path, source: int, stop_fd: int) -> tuple[bytes, bytes]:
    tap = KeepingTap()
    destination = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        forward.pump(source, destination, Direction.AGENT_TO_CLIENT, tap, stop_fd, print)
    finally:
        os.close(destination)
    return path.read_bytes(), bytes(tap.kept)


def test_a_source_made_non_blocking_by_someone_else_is_drained_on_stop(
    tmp_path: Path, stopped_source: tuple[int, int, int]
) -> None:
    source, _, stop_fd = stopped_source
    os.set_blocking(source, False)  # as a parent process may hand us a pipe
    forwarded, tapped = _pump_into(tmp_path / "out", source, stop_fd)
    assert forwarded == HELD
    assert tapped == HELD


def test_a_stop_that_comes_while_the_loop_waits_for_more_still_forwards_what_came(
    tmp_path: Path, stopped_source: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race a busy machine produces: the loop found its source empty and went to wait; the
    # agent then wrote its last chunk and exited, and the stop came before the loop woke up.
    source, _, stop_fd = stopped_source
    monkeypatch.setattr(os, "readv", _empty_once(os.readv))
    forwarded, tapped = _pump_into(tmp_path / "out", source, stop_fd)
    assert forwarded == HELD
    assert tapped == HELD


def test_what_a_writer_adds_after_the_stop_is_not_waited_for(
    tmp_path: Path, stopped_source: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, writer, stop_fd = stopped_source
    os.set_blocking(source, False)
    real_readv = os.readv

    def readv_then_more_comes(fd: int, buffers: list[memoryview]) -> int:
        size = real_readv(fd, buffers)
        os.write(writer, b"after the stop\n")  # a grandchild that goes on writing
        return size

    monkeypatch.setattr(os, "readv", readv_then_more_comes)
    forwarded, _ = _pump_into(tmp_path / "out", source, stop_fd)
    assert forwarded == HELD


def _empty_once(readv: Callable[[int, list[memoryview]], int]) -> Callable[..., int]:
    first = True

    def readv_empty_once(fd: int, buffers: list[memoryview]) -> int:
        nonlocal first
        if first:
            first = False
            raise BlockingIOError
        return readv(fd, buffers)

    return readv_empty_once
