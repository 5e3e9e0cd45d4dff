"""Benchmark of replay's start-up: process start to the first byte answering ``initialize``.

    python -m tests.perf.bench_replay_startup [--repeat 21] [--source NAME=DIR ...] [--dir DIR]

Builds, before any timing, a small recording (initialize, session/new, a prompt answered by a
few ``agent_message_chunk`` updates: tests/perf/bench_replay.py's conversation) in a SQLite
database and as a JSONL cassette. Then, per repeat and per source tree, two cases:

* ``db``: ``python -m acp_proxy replay --db DB 1``, what a client's agent command runs;
* ``cassette``: ``python -m acp_proxy replay CASSETTE --record --db SCRATCH``, what the pytest
  plugin runs for every test (the cassette imported, the replay recorded).

Each run is timed from just before the process is spawned to the first byte on its stdout,
the client having written its ``initialize`` request at once; the rest of the conversation is
then sent and the output checked against the recording. ``--source NAME=DIR`` runs the
``acp_proxy`` package found in DIR (e.g. a worktree of another commit: "before" and "after" in
one run, interleaved so that a noisy moment hits both); the default is this checkout. Prints
the median, the spread, and each source's median minus the first source's; the same for the
CPU time (user + system, ``wait4``) of each whole run, which a busy machine disturbs less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.perf.bench_replay import A2C, C2A, conversation, write

HERE = Path(__file__).resolve().parents[2]


def _run(
    python: str, source: Path, argv: list[str], client: list[bytes], expected: bytes
) -> tuple[float, float]:
    """Seconds from spawning ``argv`` to the first byte of its answer to ``initialize``, and
    the CPU seconds (user + system) of the whole process."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    start = time.perf_counter()
    with subprocess.Popen(
        [python, "-m", "acp_proxy", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, cwd=source, env=env,
    ) as process:  # fmt: skip
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(client[0])
        process.stdin.flush()
        first = os.read(process.stdout.fileno(), 65536)
        elapsed = time.perf_counter() - start
        process.stdin.write(b"".join(client[1:]))
        process.stdin.close()
        rest = process.stdout.read()
        _, wait_status, usage = os.wait4(process.pid, 0)
        process.returncode = status = os.waitstatus_to_exitcode(wait_status)
    if status != 0 or first + rest != expected:
        raise SystemExit(f"{source}: replay {argv} exited {status} or sent other bytes")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--source", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    sources = [(name, Path(folder).resolve()) for name, _, folder in
               (text.partition("=") for text in args.source)] or [("this", HERE)]  # fmt: skip
    python = sys.executable
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        folder = Path(scratch)
        exchange = conversation(20)
        db = folder / "bench.sqlite"
        write(db, exchange)
        cassette = folder / "cassette.jsonl"
        subprocess.run([python, "-m", "acp_proxy", "export", "--db", str(db), "-o", str(cassette),
                        "1"], check=True, cwd=HERE)  # fmt: skip
        client = [raw for d, raw in exchange if d is C2A]
        expected = b"".join(r for d, r in exchange if d is A2C and b'"notice"' not in r)

        def plain(_: int) -> list[str]:
            return ["replay", "--db", str(db), "1"]

        def plugin(n: int) -> list[str]:
            return ["replay", str(cassette), "--record", "--db", str(folder / f"scratch-{n}.db")]

        cases = {"db": plain, "cassette": plugin}
        times: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        for n in range(args.repeat):
            for name, source in sources:
                for case, argv in cases.items():
                    seconds, cpu_seconds = _run(python, source, argv(n), client, expected)
                    times.setdefault((name, case), []).append(seconds)
                    cpu.setdefault((name, case), []).append(cpu_seconds)
        print(
            f"replay start-up to the first byte answering initialize, median of {args.repeat}"
            f" (and the CPU time of the whole process, start-up being nearly all of it):"
        )
        first = sources[0][0]
        for (name, case), values in times.items():
            median, cpu_median = statistics.median(values), statistics.median(cpu[name, case])
            spread = f"{min(values) * 1000:.1f}..{max(values) * 1000:.1f}"
            delta = ""
            if name != first:
                delta = (
                    f"  {(median - statistics.median(times[first, case])) * 1000:+.1f} ms,"
                    f" CPU {(cpu_median - statistics.median(cpu[first, case])) * 1000:+.1f}"
                    f" ms vs {first}"
                )
            print(
                f"  {name:10} {case:9} {median * 1000:7.1f} ms  (min..max {spread} ms)"
                f"  CPU {cpu_median * 1000:6.1f} ms{delta}"
            )
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
