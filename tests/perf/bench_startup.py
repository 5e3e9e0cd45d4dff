"""Benchmark of the command line's start-up against a bare interpreter, in one interleaved run.

    python -m tests.perf.bench_startup [--repeat 21] [--source NAME=DIR ...] [--dir DIR]

The floor is ``python -I -c pass`` of the same interpreter, timed in the same run. Then, per
repeat and per source tree (``--source NAME=DIR`` runs the ``acp_proxy`` package found in DIR,
e.g. a worktree of the code before a change; the default is this checkout), in turn:

* ``--version``, ``ls``, ``show 1``, ``stats 1``, ``check 1`` against a small database
  (tests/perf/bench_replay.py's conversation, 20 updates): spawn to exit, output to a pipe
  that is read;
* ``replay``: ``replay --db DB 1`` from spawn to the first byte answering ``initialize``;
* ``anyio``: ``python -I -c`` importing anyio and running one task on asyncio, what replay's
  shell pays before any of acp-proxy's code (a floor of its own, source-independent);
* ``record``: from spawn to the first byte of the agent's answer to ``initialize``, through
  ``record --db SCRATCH -- python -I tests/perf/agent.py`` and, as ``direct``, the agent
  alone; record's added start-up is the difference of the two medians.

``--cases record,replay`` times only those cases (the floors always). Prints a Markdown table:
the median, the ratio to the floor's median and the difference from it, the fastest run and
its ratio to the fastest floor, per source; the CPU time (user + system, ``wait4``) of each
process beside it, which a busy machine disturbs less. The targets (docs/performance.md) are
printed below.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.perf.bench_replay import C2A, conversation

HERE = Path(__file__).resolve().parents[2]
AGENT = HERE / "tests" / "perf" / "agent.py"
# What replay's shell cannot start without: anyio on asyncio, running one task.
ANYIO = "import anyio, anyio.streams.memory, anyio.abc; anyio.run(anyio.sleep, 0)"
INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'

Measure = Callable[[Path, int], tuple[float, float]]


def _env(source: Path, db: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(source), "ACP_PROXY_DB": str(db), "PAGER": ""}


def _to_exit(argv: list[str], env: dict[str, str] | None, cwd: Path) -> tuple[float, float]:
    """Seconds from spawning ``argv`` to its exit (its output read), and its CPU seconds."""
    start = time.perf_counter()
    with subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, cwd=cwd,
    ) as process:  # fmt: skip
        assert process.stdout is not None
        process.stdout.read()
        _, wait_status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = status = os.waitstatus_to_exitcode(wait_status)
    if status != 0:
        raise SystemExit(f"{argv} exited {status}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _to_first_byte(
    argv: list[str], env: dict[str, str] | None, cwd: Path, first: bytes, rest: bytes = b""
) -> tuple[float, float]:
    """Seconds from spawning ``argv`` (``first`` written at once) to its first byte out."""
    start = time.perf_counter()
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, cwd=cwd,
    ) as process:  # fmt: skip
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(first)
        process.stdin.flush()
        answer = os.read(process.stdout.fileno(), 65536)
        elapsed = time.perf_counter() - start
        process.stdin.write(rest)
        process.stdin.close()
        process.stdout.read()
        _, wait_status, usage = os.wait4(process.pid, 0)
        process.returncode = status = os.waitstatus_to_exitcode(wait_status)
    if status != 0 or not answer:
        raise SystemExit(f"{argv} exited {status} or did not answer")
    return elapsed, usage.ru_utime + usage.ru_stime


WRITE = (
    "import sys; from pathlib import Path; from tests.perf.bench_replay import conversation, "
    "write; write(Path(sys.argv[1]), conversation(20))"
)


def _database(python: str, source: Path, folder: Path) -> Path:
    """The small database, written by ``source``'s own code (an older tree may not read a
    newer format)."""
    db = folder / f"bench-{abs(hash(source))}.sqlite"
    if not db.exists():
        env = {**os.environ, "PYTHONPATH": str(source)}
        subprocess.run([python, "-c", WRITE, str(db)], cwd=source, env=env, check=True)
    return db


def _cases(python: str, folder: Path) -> dict[str, Measure]:
    exchange = conversation(20)
    client = [raw for d, raw in exchange if d is C2A]
    module = [python, "-m", "acp_proxy"]

    def command(*args: str) -> Measure:
        def run(source: Path, _n: int) -> tuple[float, float]:
            db = _database(python, source, folder)
            return _to_exit([*module, *args], _env(source, db), source)

        return run

    def replay(source: Path, _n: int) -> tuple[float, float]:
        db = _database(python, source, folder)
        argv = [*module, "replay", "--db", str(db), "1"]
        return _to_first_byte(argv, _env(source, db), source, client[0], b"".join(client[1:]))

    def record(source: Path, n: int) -> tuple[float, float]:
        scratch = folder / f"record-{abs(hash(source))}-{n}.sqlite"
        argv = [*module, "record", "--db", str(scratch), "--", python, "-I", str(AGENT)]
        return _to_first_byte(argv, _env(source, scratch), source, INITIALIZE)

    return {
        "--version": command("--version"), "ls": command("ls"), "show": command("show", "1"),
        "stats": command("stats", "1"), "check": command("check", "1"), "replay": replay,
        "record": record,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--source", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--cases", default="", metavar="NAME,...",
                        help="only these cases (default: all), e.g. record,replay")  # fmt: skip
    args = parser.parse_args()
    sources = [(name, Path(folder).resolve()) for name, _, folder in
               (text.partition("=") for text in args.source)] or [("this", HERE)]  # fmt: skip
    python = sys.executable
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        folder = Path(scratch)
        cases = _cases(python, folder)
        if args.cases:
            wanted = set(args.cases.split(","))
            cases = {name: measure for name, measure in cases.items() if name in wanted}
        for _, source in sources:
            _database(python, source, folder)  # before any timing
        times: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}

        def keep(key: tuple[str, str], measured: tuple[float, float]) -> None:
            times.setdefault(key, []).append(measured[0])
            cpu.setdefault(key, []).append(measured[1])

        for n in range(args.repeat):
            keep(("", "floor"), _to_exit([python, "-I", "-c", "pass"], None, folder))
            keep(("", "anyio"), _to_exit([python, "-I", "-c", ANYIO], None, folder))
            keep(("", "direct"), _to_first_byte([python, "-I", str(AGENT)], None, folder,
                                                INITIALIZE))  # fmt: skip
            for name, source in sources:
                for case, measure in cases.items():
                    keep((name, case), measure(source, n))
        _print(times, cpu, args.repeat)


def _print(
    times: dict[tuple[str, str], list[float]], cpu: dict[tuple[str, str], list[float]], repeat: int
) -> None:
    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    floor = ms(times["", "floor"])
    direct = ms(times["", "direct"])
    print(f"start-up, median of {repeat} interleaved runs; floor `python -I -c pass` "
          f"{floor:.1f} ms (CPU {ms(cpu['', 'floor']):.1f} ms)\n")  # fmt: skip
    floor_min = min(times["", "floor"]) * 1000
    floor_cpu = ms(cpu["", "floor"])
    print("| source | case | median ms | x floor | - floor ms | min ms | min x floor min | CPU ms "
          "| CPU x floor |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (name, case), values in times.items():
        median, least, used = ms(values), min(values) * 1000, ms(cpu[name, case])
        print(f"| {name or '-'} | {case} | {median:.1f} | {median / floor:.2f} | "
              f"{median - floor:+.1f} | {least:.1f} | {least / floor_min:.2f} | {used:.1f} | "
              f"{used / floor_cpu:.2f} |")  # fmt: skip
    print()
    direct_min = min(times["", "direct"]) * 1000
    for name in dict.fromkeys(n for n, _ in times if n):
        if (name, "record") not in times or (name, "replay") not in times:
            continue
        added = ms(times[name, "record"]) - direct
        added_min = min(times[name, "record"]) * 1000 - direct_min
        print(f"{name}: record adds {added:.1f} ms to the agent's first answer "
              f"({added - floor:+.1f} ms beyond one interpreter's start, the floor); "
              f"fastest runs: {added_min:.1f} ms ({added_min - floor_min:+.1f})")  # fmt: skip
        replay = ms(times[name, "replay"]) - floor
        replay_min = min(times[name, "replay"]) * 1000 - floor_min
        print(f"{name}: replay's first byte {replay:+.1f} ms from the floor "
              f"(fastest runs {replay_min:+.1f})")  # fmt: skip
    print(f"\ntargets: --version <= 4x floor; ls, show, stats <= 6x; replay's first byte and "
          f"record's added start-up within 40 ms of the floor. "
          f"Load average at the end: {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
