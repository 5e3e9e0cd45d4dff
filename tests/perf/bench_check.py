"""Offline benchmark of the rule engine alone: no database, no CLI, CPU time.

    python -m tests.perf.bench_check [--frames 100000] [--repeat 5] [--schemas DIR]

It builds, before any timing, the conversation of tests/perf/busy_recording.py (a busy v2
agent: prompt turns with tool calls, plans and long runs of message chunks) and the records the
recorder would store for it, then times ``Checker.observe`` over every record plus
``finish()``, in CPU time of this process (``time.process_time``), which a busy machine disturbs
less than wall time. ``--schemas DIR`` validates against the schemas in DIR too (ACP000), as
``acp-proxy check`` does. Prints the median and every repeat.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from acp_proxy.check.engine import Checker
from acp_proxy.check.schema_files import load_book
from tests.support.fixtures_checks import turn, v2
from tests.support.helpers import observe_all


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--schemas", type=Path, default=None, help="schema folder (ACP000)")
    options = parser.parse_args()
    frames = list(v2())
    while len(frames) < options.frames:
        frames += turn(len(frames))
    _, records = observe_all(frames)
    book = load_book(options.schemas) if options.schemas is not None else None
    times = []
    for _ in range(options.repeat):
        checker = Checker(book)
        start = time.process_time()
        for record in records:
            checker.observe(record)
        checker.finish()
        times.append(time.process_time() - start)
    every = ", ".join(f"{t:.3f}" for t in times)
    schemas = "with schemas" if book is not None else "without schemas"
    print(f"{len(records)} frames {schemas}: median {statistics.median(times):.3f} s CPU ({every})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
