"""Benchmark: what making recorded text visible costs the readers (``show``, Markdown export).

Not part of the normal test run. Run it from the repository root:

    .venv/bin/python -m tests.perf.bench_readers --frames 100000 --repeat 7 \\
        --tree before=/path/to/other/checkout --tree after=.

Each ``--tree NAME=PATH`` is a source tree holding ``acp_proxy``; every command runs as
``python -m acp_proxy`` with that tree first on ``PYTHONPATH`` and from a neutral folder, so the
trees compare on the same recording, interleaved (one run of each per repeat), on this
machine's current load. Measured per command: wall time of the whole command with stdout to a
pipe that is read and dropped. Prints the medians and each tree's ratio to the first.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording

COMMANDS = {
    "show": ["show", "big"],
    "show --pretty": ["show", "big", "--pretty"],
    "export markdown": ["export", "big", "--format", "markdown"],
}


def build(path: Path, frames: int) -> None:
    """A connection ``big`` of ``frames`` frames: the v1 fixture repeated, clocks shifted."""
    write_recording(path, V1_CONVERSATION, label="template")
    per = len(V1_CONVERSATION)
    db = sqlite3.connect(path)
    columns = [r[1] for r in db.execute("PRAGMA table_info(frame)")][2:]
    shifted = {
        "seq": f"t.seq + n.i * {per}", "mono_ns": f"t.mono_ns + n.i * {per * 1_000_000}",
        "wall_ns": f"t.wall_ns + n.i * {per * 1_000_000}",
        "request_seq": f"t.request_seq + n.i * {per}",
    }  # fmt: skip
    select = ", ".join(shifted.get(c, f"t.{c}") for c in columns)
    db.execute(
        "INSERT INTO connection (uid, label, status, started_ns, argv, cwd, proxy_version, "
        "proxy_pid, protocol_version) VALUES ('big', 'big', 'exited', 0, '[]', '/', 't', 1, 1)"
    )
    db.execute(
        f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < "
        f"{frames // per - 1}) INSERT INTO frame (connection_id, {', '.join(columns)}) "
        f"SELECT 2, {select} FROM n, frame t WHERE t.connection_id = 1"
    )
    db.commit()
    db.close()


def timed(tree: Path, args: list[str], db: Path, cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "acp_proxy", *args, "--db", str(db)], env=env, cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=PATH")
    options = parser.parse_args()
    trees = {n: Path(p) for n, _, p in (t.partition("=") for t in options.tree)}
    with tempfile.TemporaryDirectory(prefix="acp-bench-readers-") as folder:
        db = Path(folder) / "big.sqlite"
        build(db, options.frames)
        results: dict[tuple[str, str], list[float]] = {}
        for _ in range(options.repeat):
            for command, args in COMMANDS.items():
                for name, tree in trees.items():
                    seconds = timed(tree, args, db, Path(folder))
                    results.setdefault((command, name), []).append(seconds)
    first = next(iter(trees))
    ratios = [f"{n}/{first}" for n in list(trees)[1:]]
    title = f"command ({options.frames} frames, median of {options.repeat})"
    print("| " + " | ".join([title, *trees, *ratios]) + " |")
    print("|---" * (1 + 2 * len(trees) - 1) + "|")
    for command in COMMANDS:
        medians = {n: statistics.median(results[(command, n)]) for n in trees}
        cells = [f"{medians[n]:.3f} s" for n in trees]
        ratios = [f"{medians[n] / medians[first]:.3f}" for n in list(trees)[1:]]
        print(f"| {command} | " + " | ".join(cells + ratios) + " |")


if __name__ == "__main__":
    main()
