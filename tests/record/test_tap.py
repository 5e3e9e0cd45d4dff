"""The tap (tap.py): every record arrives whole and in order, through the ring or the pipe,
however the records fall against the end of the ring, and neither side can hang the other."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.acp import Direction
from acp_proxy.record import tap
from acp_proxy.record.tap import CHUNK, CONFIG, MAX_CHUNK, UPDATE, Channel, Message, TapReader
from tests.support.polling import until

DIRECTIONS = list(Direction)


class Collector:
    """Reads a tap in a thread of this process, as the recorder's reader thread does."""

    def __init__(self, reader: TapReader) -> None:
        self.messages: list[Message] = []
        self.arrived = threading.Event()
        self._reader = reader
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for message in self._reader.messages():
            self.messages.append(message)
            self.arrived.set()

    def join(self) -> list[Message]:
        self._thread.join(30)
        assert not self._thread.is_alive(), "the reader did not end after the writer closed"
        return self.messages


# Smaller than the real ring (tap.RING_BYTES), so that a few megabytes wrap around it often.
SMALL_RING = 2 * 1024 * 1024


def _ends(ring: bool = True) -> tuple[Channel, tap.Tap, TapReader]:
    """A channel and both its ends in this process (without closing the other side's end)."""
    channel = Channel(ring=ring, ring_bytes=SMALL_RING)
    writer = tap.Tap(channel.write_fd, channel.shared, channel.ring_bytes)
    reader = TapReader(channel.read_fd, channel.shared, channel.ring_bytes)
    return channel, writer, reader


def _pair(ring: bool) -> tuple[tap.Tap, Collector]:
    _, writer, reader = _ends(ring)
    return writer, Collector(reader)


def _wait_until_asleep(writer: tap.Tap) -> None:
    """Until the reader says, in the shared control words, that it sleeps on the wake pipe."""
    until(
        lambda: writer._words[tap._SLEEPING], "the reader going to sleep"
    )  # as the writer reads it


class _Looks:
    """What the reader and the writers of this process do between two looks: each wait the
    reader begins (how long it means to wait) and each wake-up a writer sends."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.waits: list[float] = []
        self.wakes = 0
        wait, wake = TapReader._wait, tap.Tap._wake

        def counted_wait(reader: TapReader, poller: Any, seconds: float) -> bool:
            self.waits.append(seconds)
            return wait(reader, poller, seconds)

        def counted_wake(writer: tap.Tap) -> None:
            self.wakes += 1
            wake(writer)

        monkeypatch.setattr(TapReader, "_wait", counted_wait)
        monkeypatch.setattr(tap.Tap, "_wake", counted_wake)


def _chunks(messages: list[Message]) -> dict[Direction, bytes]:
    """The byte stream of each direction (chunks may arrive cut into pieces)."""
    streams = dict.fromkeys(DIRECTIONS, b"")
    for kind, direction, _, payload in messages:
        if kind == CHUNK:
            streams[direction] += payload
    return streams


@pytest.mark.parametrize("ring", [True, False], ids=["ring", "pipe"])
@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(
        st.tuples(st.sampled_from(range(3)), st.integers(0, 300_000)), min_size=1, max_size=30
    )
)
def test_every_chunk_arrives_whole_and_in_order(ring: bool, sizes: list[tuple[int, int]]) -> None:
    # Up to 9 MB per example through a 2 MiB ring: records wrap at every possible offset.
    writer, collector = _pair(ring)
    sent = []
    for number, (code, size) in enumerate(sizes):
        payload = bytes([number % 251]) * size
        writer.put(DIRECTIONS[code], number, payload)
        sent.append((CHUNK, DIRECTIONS[code], number, payload))
    writer.close()
    received = collector.join()
    assert [m for m in received if m[3]] == [m for m in sent if m[3]]
    # An empty chunk is the end-of-stream mark: it must arrive as one, never be dropped.
    assert [m for m in received if not m[3]] == [m for m in sent if not m[3]]


@pytest.mark.parametrize("ring", [True, False], ids=["ring", "pipe"])
def test_chunks_larger_than_the_ring_allows_arrive_in_pieces(ring: bool) -> None:
    writer, collector = _pair(ring)
    whole = os.urandom(3 * MAX_CHUNK + 12345)  # replay hands the tap whole 16 MiB frames
    writer.put(Direction.AGENT_TO_CLIENT, 7, whole)
    writer.put(Direction.AGENT_TO_CLIENT, 8, b"")
    writer.close()
    received = collector.join()
    assert _chunks(received)[Direction.AGENT_TO_CLIENT] == whole
    assert received[-1] == (CHUNK, Direction.AGENT_TO_CLIENT, 8, b"")
    assert {m[2] for m in received[:-1]} == {7}


@pytest.mark.parametrize("ring", [True, False], ids=["ring", "pipe"])
def test_json_messages_keep_their_place_among_chunks(ring: bool) -> None:
    writer, collector = _pair(ring)
    writer.put(Direction.CLIENT_TO_AGENT, 1, b"a\n")
    writer.configure(db="/tmp/x.sqlite", check=False)
    writer.update(agent_pid=42)
    writer.put(Direction.CLIENT_TO_AGENT, 2, b"b\n")
    writer.close()
    kinds = [(kind, payload) for kind, _, _, payload in collector.join()]
    assert kinds == [
        (CHUNK, b"a\n"),
        (CONFIG, b'{"db":"/tmp/x.sqlite","check":false}'),
        (UPDATE, b'{"agent_pid":42}'),
        (CHUNK, b"b\n"),
    ]


def test_threads_writing_at_once_never_interleave_records() -> None:
    writer, collector = _pair(True)

    def write(direction: Direction) -> None:
        for number in range(3000):
            writer.put(direction, number, bytes([number % 256]) * (number % 700 + 1))

    threads = [threading.Thread(target=write, args=(d,)) for d in DIRECTIONS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    received = collector.join()
    for direction in DIRECTIONS:
        mine = [(n, p) for _, d, n, p in received if d == direction]
        assert mine == [(n, bytes([n % 256]) * (n % 700 + 1)) for n in range(3000)]


def test_a_sleeping_reader_is_woken_by_the_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the sleep this long, only the wake-up byte can deliver the record in time.
    monkeypatch.setattr(tap, "IDLE_SECONDS", 0.0)
    monkeypatch.setattr(tap, "SLEEP_SECONDS", 60.0)
    writer, collector = _pair(True)
    _wait_until_asleep(writer)  # the reader has found the ring empty and raised its flag
    writer.put(Direction.AGENT_TO_CLIENT, 1, b"hello\n")
    assert collector.arrived.wait(10), "the sleeping reader was not woken"
    writer.close()
    assert collector.join() == [(CHUNK, Direction.AGENT_TO_CLIENT, 1, b"hello\n")]


def test_a_burst_wakes_a_reader_between_two_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reader looks rarely while traffic flows (here: never in time); a burst that fills
    # the ring past half must wake it, or the rest of the burst would find the ring full.
    monkeypatch.setattr(tap, "ACTIVE_POLL_SECONDS", 60.0)
    monkeypatch.setattr(tap, "IDLE_SECONDS", 600.0)
    looks = _Looks(monkeypatch)
    writer, collector = _pair(True)
    until(lambda: looks.waits, "the reader's first look")  # it found nothing and waits
    record = tap.HEADER.size + 65536
    crossing = SMALL_RING // 2 // record + 1  # the record that fills the ring past half
    for number in range(crossing + 2):
        writer.put(Direction.AGENT_TO_CLIENT, number, b"x" * 65536)
    # Woken at the crossing, it reads at least that far (records published after it wait for
    # the next look: 2 ms in real use, never here).
    until(lambda: len(collector.messages) >= crossing, "the reader woken at half full")
    assert writer.full_waits == 0
    writer.close()
    assert len(collector.join()) == crossing + 2


def test_a_trickle_is_looked_at_slowly_and_a_stream_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Interactive traffic must not wake the reader every few milliseconds (it can delay a
    # peer); a stream must still be taken at the active pace.
    monkeypatch.setattr(tap, "TRICKLE_POLL_SECONDS", 60.0)  # a slow look: never in time here
    monkeypatch.setattr(tap, "ACTIVE_POLL_SECONDS", 0.002)
    monkeypatch.setattr(tap, "IDLE_SECONDS", 600.0)
    looks = _Looks(monkeypatch)
    writer, collector = _pair(True)
    writer.put(Direction.AGENT_TO_CLIENT, 1, b"first\n")  # taken at the first, active, look
    assert collector.arrived.wait(10)
    # The look found a trickle: the reader's next wait is a slow one ...
    until(lambda: looks.waits and looks.waits[-1] == 60.0, "a slow look after a trickle")
    wakes = looks.wakes
    writer.put(Direction.AGENT_TO_CLIENT, 2, b"second\n")
    # ... and a small record does not wake it: it stays for the next slow look.
    assert looks.wakes == wakes, "a trickle woke the reader"
    assert len(collector.messages) == 1
    # A stream begins: a writer wakes the reader once a stream's worth of bytes waits (well
    # before half the ring), and the reader takes everything in order.
    burst = 64 * 1024
    for number in range(3, 3 + tap.STREAM_LOOK_BYTES // burst + 1):
        writer.put(Direction.AGENT_TO_CLIENT, number, b"x" * burst)
    assert tap.STREAM_LOOK_BYTES + burst < SMALL_RING // 2
    until(lambda: len(collector.messages) >= 3, "the stream taken")
    assert [m[2] for m in collector.messages[:3]] == [1, 2, 3]
    # A stream found at that look keeps the reader at the active pace.
    before = len(collector.messages)
    writer.put(Direction.AGENT_TO_CLIENT, 99, b"y" * burst)
    until(lambda: len(collector.messages) > before, "a stream looked at at the active pace", 2)
    writer.close()
    collector.join()


def test_everything_published_is_read_when_the_writer_is_killed() -> None:
    channel = Channel(ring=True, ring_bytes=SMALL_RING)
    pid = os.fork()
    if pid == 0:  # the proxy: publishes records, then dies without closing anything
        try:
            writer = channel.writer()
            for number in range(5000):
                writer.put(Direction.AGENT_TO_CLIENT, number, b"%d\n" % number)
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    collector = Collector(channel.reader())
    received = collector.join()
    os.waitpid(pid, 0)
    assert [payload for _, _, _, payload in received] == [b"%d\n" % n for n in range(5000)]


def test_the_writer_stops_waiting_when_the_reader_is_gone() -> None:
    channel = Channel(ring=True, ring_bytes=SMALL_RING)
    pid = os.fork()
    if pid == 0:  # the recorder: dies without reading a byte
        os._exit(0)
    writer = channel.writer()
    os.waitpid(pid, 0)
    started = time.monotonic()
    for number in range(100):  # 6.5 MB into a 2 MiB ring that nobody empties
        writer.put(Direction.AGENT_TO_CLIENT, number, b"y" * 65536)
    assert time.monotonic() - started < 10
    assert writer.full_waits <= 1  # it noticed at once (EPIPE or an error), then stopped sending
    writer.close()


def test_a_full_ring_makes_the_writer_wait_until_the_reader_frees_room() -> None:
    # The documented backpressure: nothing is dropped, the writer waits, then goes on promptly.
    _, writer, reader = _ends()
    collectors: list[Collector] = []
    late = threading.Timer(0.3, lambda: collectors.append(Collector(reader)))
    late.start()  # the reader starts looking only after 0.3 s
    started = time.monotonic()
    payloads = [bytes([n]) * 65536 for n in range(64)]  # 4 MiB into a 2 MiB ring
    for number, payload in enumerate(payloads):
        writer.put(Direction.AGENT_TO_CLIENT, number, payload)
    waited = time.monotonic() - started
    late.join()
    writer.close()
    received = collectors[0].join()
    assert [payload for _, _, _, payload in received] == payloads
    assert writer.full_waits >= 1
    assert waited >= 0.25  # it did wait for the reader: nothing was dropped or overwritten


def test_a_writer_that_finds_the_ring_empty_goes_back_to_its_start() -> None:
    # Only as much of the ring is touched (resident in both processes) as the reader lags.
    channel, writer, reader = _ends()
    assert channel.shared is not None
    collector = Collector(reader)
    payload = b"z" * 65536

    def taken(count: int) -> Callable[[], bool]:
        return lambda: len(collector.messages) >= count

    for number in range(300):  # 20 MB, each chunk taken before the next is written
        writer.put(Direction.AGENT_TO_CLIENT, number, payload)
        until(taken(number + 1), "the chunk taken", 10, every=0.0005)
    writer.close()
    assert [m[3] for m in collector.join()] == [payload] * 300
    ring = channel.shared[-SMALL_RING:]  # the data area, after the control words
    untouched = ring[tap.RESTART_OFFSET + tap.HEADER.size + len(payload) :]
    assert untouched == bytes(len(untouched)), "the writer went on past the restart offset"


def test_views_in_a_batch_stay_intact_until_the_next_batch_is_asked_for() -> None:
    # The room of a batch's records goes back to the writers only when the consumer is done.
    _, writer, reader = _ends()
    payloads = [bytes([n % 251]) * 65536 for n in range(200)]  # 13 MB through 2 MiB

    def write() -> None:
        for number, payload in enumerate(payloads):
            writer.put(Direction.AGENT_TO_CLIENT, number, payload)
        writer.close()

    def waited_since(waits: int) -> Callable[[], bool]:
        return lambda: writer.full_waits > waits or not thread.is_alive()

    thread = threading.Thread(target=write)
    thread.start()
    received = []
    released = 0  # the writer's waits for room when the last batch went back to it
    for batch in reader.batches():
        # Held until the writer waits for room again (or has written everything): the room of
        # this batch is what it waits for, and it must not take it.
        until(waited_since(released), "the writer waiting for room")
        received += [(number, bytes(payload)) for _, _, number, payload in batch]
        released = writer.full_waits
    thread.join()
    assert received == list(enumerate(payloads))
    assert writer.full_waits > 0  # the writer did run into the batches being held


def test_the_reader_hands_on_batches_of_bounded_size() -> None:
    # What the reader handed on is in the recorder's bounded queue before it hands on more.
    _, writer, reader = _ends()
    for number in range(24):  # 1.5 MiB published before the reader first looks
        writer.put(Direction.AGENT_TO_CLIENT, number, b"b" * 65536)
    writer.close()
    batches = [[m[2] for m in batch] for batch in reader.batches()]
    assert [n for batch in batches for n in batch] == list(range(24))
    assert max(len(batch) for batch in batches) * 65536 <= tap.READ_BATCH_BYTES + 65536


def test_the_ring_must_hold_the_largest_chunk() -> None:
    with pytest.raises(ValueError):
        Channel(ring=True, ring_bytes=MAX_CHUNK)


def test_a_reader_that_does_not_read_holds_the_writer_at_most_max_wait() -> None:
    # Past the bound, chunks are left out as one LOST record (sent once there is room again),
    # the proxy says so once, and what is said at the end (an update) still gets through.
    said: list[str] = []
    channel = Channel(ring=True, ring_bytes=SMALL_RING)
    writer = tap.Tap(channel.write_fd, channel.shared, channel.ring_bytes, said.append, 0.2)
    reader = TapReader(channel.read_fd, channel.shared, channel.ring_bytes)
    payloads = [bytes([n % 250]) * 30_000 + b"\n" for n in range(200)]  # 6 MB, 2 MiB ring
    started = time.monotonic()
    for number, payload in enumerate(payloads):
        writer.put(Direction.AGENT_TO_CLIENT, number, payload)
    waited = time.monotonic() - started
    assert 0.15 <= waited < 2  # one wait of the bound, then no more waiting
    assert writer.dropped_chunks > 0
    writer.update(exit_code=0)
    collector = Collector(reader)
    writer.close()
    received = collector.join()
    kept = [bytes(p) for kind, _, _, p in received if kind == CHUNK]
    lost = [tap.decode_lost(p) for kind, _, _, p in received if kind == tap.LOST]
    assert kept == payloads[: len(kept)]  # a clean prefix; the rest is one hole
    assert len(lost) == 1
    assert lost[0].size == sum(map(len, payloads[len(kept) :]))
    assert lost[0].newlines == len(payloads) - len(kept)
    assert received[-1][0] == UPDATE
    assert len(said) == 1
    assert "frames are left out of the recording" in said[0]


def test_an_infinite_bound_keeps_every_chunk() -> None:
    _, writer, reader = _ends()
    writer.max_wait = float("inf")
    collectors: list[Collector] = []
    late = threading.Timer(0.3, lambda: collectors.append(Collector(reader)))
    late.start()
    payloads = [bytes([n]) * 65536 for n in range(64)]
    for number, payload in enumerate(payloads):
        writer.put(Direction.AGENT_TO_CLIENT, number, payload)
    late.join()
    writer.close()
    assert [p for _, _, _, p in collectors[0].join()] == payloads
    assert writer.dropped_chunks == 0
