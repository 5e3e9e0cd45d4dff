"""What ``record --otlp`` costs forwarding: 186 B frames with live export against without it.

    python -m tests.perf.bench_otel [--repeat 5] [--count 200000] [--shape small]

Three wrappers in the same run, interleaved (the order rotates from repeat to repeat), each
streaming ``--count`` frames of the harness's fake agent (tests/perf/agent.py) to its client:

- ``direct``: the client spawns the agent itself;
- ``acp-proxy``: ``record --db {tmpdir}/r.sqlite --``, through tests/perf/variants.py
  ``as-built`` (the real command, nothing patched) so that it counts how often forwarding found
  the tap's ring full and waited for the recorder process;
- ``acp-proxy --otlp``: the same with ``--otlp URL``, URL a real OTLP/HTTP receiver
  (tests/support/otlp_receiver.py) in a process of its own, decoding every request.

It prints, as medians over repeats, each wrapper's delivery throughput (MB/s at the client)
and its ratio to direct in the same repeat, the ratio of ``--otlp`` to plain ``acp-proxy`` in
the same repeat (the figure that matters: 1.00 is "no measurable difference"), the exit drain
(time from the client closing stdin to the proxy's exit, which includes sending the last
spans), how many spans the receiver took, and the full-ring waits: the one way the recorder
process (where live export runs) can hold forwarding up, counted rather than inferred from
throughput on a noisy machine. Every proxy run's database is checked for every
frame and byte, as tests/perf/run.py does. Not run by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.perf.run import Run, Wrapper, run_one

DIRECT, PLAIN, OTLP = "direct", "acp-proxy", "acp-proxy --otlp"


class ReceiverProcess:
    """tests/support/otlp_receiver.py in its own process (it must not share our GIL)."""

    def __init__(self, folder: Path) -> None:
        self._port_file = folder / "receiver-port"
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.otlp_receiver", str(self._port_file)]
        )
        deadline = time.monotonic() + 30
        while not self._port_file.exists() or not self._port_file.read_text().strip():
            if time.monotonic() > deadline or self._process.poll() is not None:
                raise RuntimeError("the OTLP receiver did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self._port_file.read_text().split()[0]}"

    def stop(self) -> int:
        """Stop it; returns how many spans it received."""
        self._process.send_signal(signal.SIGTERM)
        self._process.wait(timeout=30)
        return int(self._port_file.read_text().split()[1])


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.bench_otel", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--shape", default="small", choices=["small", "medium"])
    parser.add_argument("--timeout", type=float, default=300.0)
    options = parser.parse_args(args)
    root = Path(tempfile.mkdtemp(prefix="acp-perf-otel-"))
    receiver = ReceiverProcess(root)
    # Both proxies through the same launcher, which also counts the full-ring waits.
    waits = root / "full-waits-{name}.jsonl"
    variants = [sys.executable, "-m", "tests.perf.variants", "as-built", "--full-waits"]
    record = ["record", "--db", "{tmpdir}/r.sqlite"]
    wrappers = [
        Wrapper(DIRECT, ()),
        Wrapper(PLAIN, (*variants, str(waits).format(name="plain"), *record, "--")),
        Wrapper(OTLP, (*variants, str(waits).format(name="otlp"), *record, "--otlp",
                       receiver.url, "--")),
    ]  # fmt: skip
    runs: list[Run] = []
    load_start = os.getloadavg()[0]
    try:
        with (root / "stderr.log").open("wb") as errors:
            for rep in range(options.repeat):
                shift = rep % len(wrappers)
                for wrapper in wrappers[shift:] + wrappers[:shift]:
                    run = run_one(
                        wrapper, options.shape, options.count, rep, root, errors, options.timeout
                    )
                    runs.append(run)
                    state = "ok" if run["ok"] and run.get("db_ok", True) else "FAILED"
                    print(
                        f"rep {rep} {wrapper.name:17s} {_fmt(run.get('mbps'), '7.1f')} MB/s, "
                        f"exit {_fmt(run.get('exit_ms'), '.0f')} ms, {state}",
                        file=sys.stderr,
                    )
    finally:
        spans = receiver.stop()
    full = {name: _waits(root / f"full-waits-{name}.jsonl") for name in ("plain", "otlp")}
    print(table(runs, options, spans, (load_start, os.getloadavg()[0]), full))
    print(f"(wrappers' stderr: {root / 'stderr.log'})", file=sys.stderr)
    return 0 if all(r["ok"] and r.get("db_ok", True) for r in runs) else 1


def _waits(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [json.loads(line)["full_waits"] for line in path.read_text().splitlines() if line]


def table(
    runs: list[Run], options: Any, spans: int, load: tuple[float, float],
    full: dict[str, list[int]],
) -> str:  # fmt: skip
    by: dict[tuple[str, int], Run] = {(r["wrapper"], r["rep"]): r for r in runs if r["ok"]}

    def per_repeat(name: str, base: str) -> list[float]:
        return [
            by[(name, rep)]["mbps"] / by[(base, rep)]["mbps"]
            for rep in range(options.repeat)
            if (name, rep) in by and (base, rep) in by
        ]

    lines = [
        f"186 B frames ({options.shape}), {options.count:,} per run, {options.repeat} "
        "interleaved repeats; medians.",
        "",
        "| | direct | acp-proxy | acp-proxy --otlp |",
        "|---|---|---|---|",
    ]
    mbps = [_median([r["mbps"] for r in runs if r["ok"] and r["wrapper"] == w]) for w in
            (DIRECT, PLAIN, OTLP)]  # fmt: skip
    lines.append("| delivery, MB/s | " + " | ".join(_fmt(v, ".1f") for v in mbps) + " |")
    ratios = [_median(per_repeat(w, DIRECT)) for w in (PLAIN, OTLP)]
    lines.append("| ratio to direct | 1.00 | " + " | ".join(_fmt(v, ".2f") for v in ratios) + " |")
    lines.append(
        f"| --otlp / acp-proxy | | 1.00 | {_fmt(_median(per_repeat(OTLP, PLAIN)), '.2f')} |"
    )
    exits = [_median([r["exit_ms"] for r in runs if r["ok"] and r["wrapper"] == w and r["exit_ms"]
                      is not None]) for w in (DIRECT, PLAIN, OTLP)]  # fmt: skip
    lines.append("| exit drain, ms | " + " | ".join(_fmt(v, ".0f") for v in exits) + " |")
    verified = [sum(1 for r in runs if r["wrapper"] == w and r.get("db_ok")) for w in (PLAIN, OTLP)]
    lines.append(
        f"| DB verified | | {verified[0]}/{options.repeat} | {verified[1]}/{options.repeat} |"
    )
    lines.append(f"| spans received | | | {spans} |")
    plain, otlp = full["plain"], full["otlp"]
    lines.append(
        f"| forwarding waited on a full tap ring (total, per run) | | {sum(plain)} "
        f"({', '.join(map(str, plain))}) | {sum(otlp)} ({', '.join(map(str, otlp))}) |"
    )
    lines.append("")
    lines.append(f"Load average (1 min) at start {load[0]:.2f}, at end {load[1]:.2f}.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
