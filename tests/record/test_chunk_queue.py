"""ChunkQueue: order is kept across memory and spill file, memory stays bounded, nothing lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.chunk_queue import ChunkItem, ChunkQueue
from acp_proxy.record.losses import Lost

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


def drain(queue: ChunkQueue, limit: int = 1 << 62) -> list[ChunkItem]:
    taken: list[ChunkItem] = []
    while (batch := queue.take(limit=limit, idle=0)) is not None:
        if not batch:
            break
        taken += batch
    return taken


@settings(max_examples=60, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=300), max_size=60),
    take_after=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
    memory=st.integers(min_value=1, max_value=600),
    limit=st.integers(min_value=1, max_value=900),
    group=st.integers(min_value=1, max_value=8),
)
def test_order_is_kept_whatever_the_spilling(
    chunks: list[bytes], take_after: list[int], memory: int, limit: int, group: int
) -> None:
    queue = ChunkQueue(memory_bytes=memory, spill_bytes=1 << 30)
    expected = [(C2A if i % 3 else A2C, i, chunk) for i, chunk in enumerate(chunks)]
    taken: list[ChunkItem] = []
    points = set(take_after)
    for i in range(0, len(expected), group):  # the reader hands over what one look found
        if i in points:  # the recorder takes some while the reader is still putting
            batch = queue.take(limit=limit, idle=0)
            assert batch is not None
            taken += batch
        queue.put_many(expected[i : i + group])
    queue.close()
    taken += drain(queue, limit)
    assert taken == expected
    assert queue.take() is None


def test_memory_holds_at_most_the_bound_and_the_rest_spills(tmp_path: Path) -> None:
    queue = ChunkQueue(memory_bytes=1000, spill_bytes=1 << 20, spill_dir=str(tmp_path))
    for i in range(100):
        queue.put(A2C, i, b"x" * 100)
    assert queue.spilled_bytes == 9000  # ten chunks in memory, the other ninety on disk
    assert list(tmp_path.iterdir()) == []  # the spill file is unlinked from the start
    queue.close()
    assert [mono for _, mono, _ in drain(queue, limit=2500)] == list(range(100))


def test_views_are_used_only_during_put_many(tmp_path: Path) -> None:
    # The tap hands chunks over as views into its ring, which the writers reuse right after.
    queue = ChunkQueue(memory_bytes=300, spill_bytes=1 << 20, spill_dir=str(tmp_path))
    ring = bytearray(1000)
    expected = []
    for round_number in range(5):
        ring[:] = bytes([round_number]) * 1000
        whole = memoryview(ring)
        queue.put_many(
            [(A2C, round_number * 10 + i, whole[i * 200 : i * 200 + 200]) for i in range(5)]
        )
        expected += [(A2C, round_number * 10 + i, bytes([round_number]) * 200) for i in range(5)]
        whole.release()  # fails if the queue still holds a view of the ring
    assert queue.spilled_bytes > 0  # some went to memory, the rest to the spill file
    queue.close()
    assert drain(queue) == expected


def test_a_spill_of_more_records_than_one_system_call_takes(tmp_path: Path) -> None:
    queue = ChunkQueue(memory_bytes=10, spill_bytes=1 << 30, spill_dir=str(tmp_path))
    items = [(A2C, i, b"%d\n" % i) for i in range(3000)]  # 6,000 buffers: several pwritev
    queue.put_many(items)
    queue.close()
    assert drain(queue, 1 << 20) == items
    assert queue.spilled_bytes >= sum(len(chunk) for _, _, chunk in items) - 10  # all but memory


def test_a_full_spill_makes_put_wait_and_says_so_once() -> None:
    said: list[str] = []
    queue = ChunkQueue(memory_bytes=10, spill_bytes=100, report=said.append)
    queue.put(C2A, 0, b"a" * 10)  # memory
    queue.put(C2A, 1, b"b" * 60)  # spill
    done = threading.Event()

    def put_more() -> None:
        queue.put(C2A, 2, b"c" * 60)  # would pass the spill bound: waits
        queue.put(C2A, 3, b"d" * 60)
        done.set()

    putter = threading.Thread(target=put_more)
    putter.start()
    assert not done.wait(0.2)  # blocked while the recorder takes nothing
    taken = drain_until(queue, 4)
    putter.join(10)
    assert done.is_set()
    assert [mono for _, mono, _ in taken] == [0, 1, 2, 3]
    assert len(said) == 1
    assert "forwarding waits" in said[0]
    assert queue.waits >= 1


def drain_until(queue: ChunkQueue, count: int) -> list[ChunkItem]:
    taken: list[ChunkItem] = []
    while len(taken) < count:
        batch = queue.take(idle=5)
        assert batch
        taken += batch
    return taken


def test_a_burst_waits_for_its_pause_and_becomes_one_batch() -> None:
    queue = ChunkQueue()
    queue.put(C2A, 0, b"{}\n")

    def later() -> None:
        queue.put(A2C, 1, b"{}\n")

    timer = threading.Timer(0.02, later)
    timer.start()
    batch = queue.take(quiet=1.0, patience=10)  # a pause far longer than a busy machine's stall
    timer.join()
    assert batch is not None
    assert [mono for _, mono, _ in batch] == [0, 1]


def _stream(queue: ChunkQueue, seconds: float, every: float = 0.002) -> threading.Thread:
    def put_steadily() -> None:
        deadline = time.monotonic() + seconds
        number = 0
        while time.monotonic() < deadline:
            queue.put(A2C, number, b"{}\n")
            number += 1
            time.sleep(every)

    thread = threading.Thread(target=put_steadily)
    thread.start()
    return thread


def test_recording_waits_while_a_stream_flows() -> None:
    queue = ChunkQueue()
    stream = _stream(queue, 0.3)
    # The quiet it waits for is far longer than a thread's stall on a busy machine.
    first = queue.take(quiet=1.0, patience=10, idle=5)
    assert not stream.is_alive(), "taken while chunks were still coming every 2 ms"
    stream.join()
    assert first is not None
    assert len(first) > 20  # the whole stream in one batch


def test_patience_bounds_the_wait_in_a_stream_that_never_pauses() -> None:
    queue = ChunkQueue()
    stream = _stream(queue, 3.0)
    started = time.monotonic()
    batch = queue.take(quiet=0.05, patience=0.1, idle=5)
    waited = time.monotonic() - started
    assert batch
    assert waited < 2.0, "patience did not end the wait"
    # The next batch is bounded the same way, however the stream goes on.
    queue.put(A2C, -1, b"x\n")
    started = time.monotonic()
    assert queue.take(quiet=0.05, patience=0.1, idle=5)
    assert time.monotonic() - started < 1.0
    stream.join()


def test_enough_bytes_end_the_wait() -> None:
    queue = ChunkQueue()
    stream = _stream(queue, 3.0)
    queue.put(A2C, -1, b"x" * 100)
    started = time.monotonic()
    assert queue.take(quiet=0.05, patience=10, enough=64, idle=5)
    assert time.monotonic() - started < 2.0
    stream.join()


def test_idle_returns_an_empty_batch_and_close_ends() -> None:
    queue = ChunkQueue()
    assert queue.take(idle=0.01) == []
    queue.close()
    assert queue.take(idle=0.01) is None


def test_discard_counts_lost_frames_in_memory_and_spill() -> None:
    queue = ChunkQueue(memory_bytes=8)
    queue.put(C2A, 0, b"1\n2\n")
    queue.put(C2A, 1, b"3\n4\n5\n")  # spilled
    queue.discard()
    queue.put(C2A, 2, b"6\n")  # after the failure: counted, not kept
    assert queue.discarded_frames == 6
    queue.close()
    assert queue.take() is None


def test_a_spill_file_that_cannot_be_written_turns_chunks_into_holes_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import errno
    import os

    from acp_proxy.record import chunk_queue

    def full(*_: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(chunk_queue.os, "pwritev", full)
    said: list[str] = []
    queue = ChunkQueue(memory_bytes=4, report=said.append)
    queue.put(C2A, 0, b"1\n2\n")  # memory
    queue.put(C2A, 1, b"3\n4")  # would spill: a hole
    queue.put(A2C, 2, b"x\n")  # while the hole waits behind the queue: a hole too
    queue.put(C2A, 3, b"\n5\n")  # joins the c2a hole
    queue.put(C2A, 4, b"")  # an end of stream is kept
    taken = drain(queue)
    assert taken[0] == (C2A, 0, b"1\n2\n")
    holes = [(d, c) for d, _, c in taken[1:]]
    first = holes[0][1]
    assert isinstance(first, Lost)
    assert "No space left on device" in first.reason
    assert holes == [
        (C2A, Lost(6, 3, True, first.reason)),
        (A2C, Lost(2, 1, True, first.reason)),
        (C2A, b""),
    ]
    assert len(said) == 1
    assert "spill file cannot be written" in said[0]
    monkeypatch.setattr(chunk_queue.os, "pwritev", os.pwritev)
    queue.put(C2A, 5, b"6\n")  # drained: the queue starts afresh
    assert drain(queue) == [(C2A, 5, b"6\n")]
