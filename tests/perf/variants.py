"""A benchmark wrapper: ``acp-proxy record`` with one piece of recording switched off.

    python -m tests.perf.variants VARIANT [--cpu-report FILE] [--full-waits FILE] record ...

It runs the real ``record`` command (acp_proxy.cli.entry.main, same spawn, fork, threads and
recorder) after patching one piece of the running program, so that a benchmark can show what
that piece costs. For example, with the shared bench (from a scratch folder):

    python3 ../shared/bench/run_matrix.py --modes medium --repeat 21 \\
        --wrapper 'as-built=PY -m tests.perf.variants as-built record --db {log}/r.sqlite --' \\
        --wrapper 'drop=PY -m tests.perf.variants drop record --db {log}/r.sqlite --'

(PY: the project's virtualenv python, with PYTHONPATH set to the repository.) Variants:

- ``as-built``: nothing patched; the same launcher as the others, for a fair comparison.
- ``no-tap``: the forwarding threads put nothing on the tap; the recorder process starts,
  opens the database and records the connection, but none of its frames.
- ``drop``: the tap is written as usual, and the recorder's reader lets every chunk go (nothing
  is held or recorded): the cost of the tap alone.
- ``memory``: the recorder's queue holds everything in memory (1 GiB) instead of spilling
  past 4 MiB: holding a burst in anonymous memory instead of the page cache.
- ``no-pause-work``: the recording thread never starts on a stream that has not paused (no
  byte bound, 10 s of patience): the cost of SQLite work during a stream.
- ``no-index``: the recorder does not keep the full-text search index (``search`` catches up
  on first use): what indexing costs the recorder, and whether it shows in forwarding.

``--cpu-report FILE`` appends one JSON line to FILE when the recorder's tap reader ends: the
CPU seconds that thread used (``time.thread_time``) and the bytes it handed on.
``--full-waits FILE`` (after it, if both) appends one JSON line when the proxy exits: how many
times forwarding found the tap's ring full and waited for the recorder process.

Not a product feature: the variants lose data on purpose. Nothing here is imported by the
project.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from acp_proxy.cli import entry
from acp_proxy.protocol.acp import Direction
from acp_proxy.record import chunk_queue, recorder, tap
from acp_proxy.store import writer

VARIANTS = ("as-built", "no-tap", "drop", "memory", "no-pause-work", "no-index")
USAGE = (
    "usage: python -m tests.perf.variants {" + ",".join(VARIANTS) + "} "
    "[--cpu-report FILE] [--full-waits FILE] record --db PATH -- AGENT..."
)


def _no_tap() -> None:
    def put_view(self: tap.Tap, direction: Direction, mono_ns: int, chunk: memoryview) -> None:
        return None

    tap.Tap.put_view = put_view  # type: ignore[method-assign]


def _drop() -> None:
    batches = tap.TapReader.batches

    def dropping(self: tap.TapReader) -> Iterator[list[tap.Message]]:
        for batch in batches(self):
            yield [message for message in batch if message[0] != tap.CHUNK]

    tap.TapReader.batches = dropping  # type: ignore[method-assign]


def _memory() -> None:
    init = chunk_queue.ChunkQueue.__init__

    def in_memory(self: chunk_queue.ChunkQueue, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._memory_bytes = 1 << 30

    chunk_queue.ChunkQueue.__init__ = in_memory  # type: ignore[method-assign]


def _no_pause_work() -> None:
    recorder.ENOUGH_BYTES = 1 << 40
    recorder.PATIENCE_SECONDS = 10.0


def _no_index() -> None:
    def unindexed(self: writer.RecordingWriter, limit: int | None = None) -> int:
        return 0

    writer.RecordingWriter.index_pending = unindexed  # type: ignore[method-assign]


def _report_reader_cpu(path: str) -> None:
    batches = tap.TapReader.batches

    def measured(self: tap.TapReader) -> Iterator[list[tap.Message]]:
        started = time.thread_time()
        handed_on = 0
        try:
            for batch in batches(self):
                handed_on += sum(len(message[3]) for message in batch)
                yield batch
        finally:
            line = {"reader_cpu_s": time.thread_time() - started, "bytes": handed_on}
            with open(path, "a", encoding="utf-8") as report:
                report.write(json.dumps(line) + "\n")

    tap.TapReader.batches = measured  # type: ignore[method-assign]


def _report_full_waits(path: str) -> None:
    """At the proxy's exit, how often forwarding found the tap's ring full and had to wait."""
    import atexit

    taps: list[tap.Tap] = []
    init = tap.Tap.__init__

    def counted(self: tap.Tap, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        taps.append(self)

    def write() -> None:
        with open(path, "a", encoding="utf-8") as report:
            report.write(json.dumps({"full_waits": sum(t.full_waits for t in taps)}) + "\n")

    tap.Tap.__init__ = counted  # type: ignore[method-assign]
    atexit.register(write)


PATCHES: dict[str, Callable[[], None]] = {
    "as-built": lambda: None,
    "no-tap": _no_tap,
    "drop": _drop,
    "memory": _memory,
    "no-pause-work": _no_pause_work,
    "no-index": _no_index,
}


def main(args: list[str]) -> None:
    if not args or args[0] not in PATCHES:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    variant, rest = args[0], args[1:]
    if rest[:1] == ["--cpu-report"] and len(rest) > 1:
        _report_reader_cpu(rest[1])
        rest = rest[2:]
    if rest[:1] == ["--full-waits"] and len(rest) > 1:
        _report_full_waits(rest[1])
        rest = rest[2:]
    PATCHES[variant]()
    entry.main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
