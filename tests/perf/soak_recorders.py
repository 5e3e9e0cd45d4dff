"""The long soak: many proxies recording into one database while CPU-bound processes run.

    python -m tests.perf.soak_recorders [--rounds 5] [--proxies 8] [--frames 7000]
                                        [--hogs 3] [--hog-seconds 30] [--group 20] [--pause-ms 10]

Each round starts ``--hogs`` busy loops at normal priority for ``--hog-seconds``, then
``--proxies`` proxies (``acp-proxy record`` around tests/support/agents/fake_agent.py in
``drip`` mode: ``--frames`` frames, ``--group`` at a time, ``--pause-ms`` apart, so many small
batches are committed while the machine is loaded), each sent 500 frames by its client. It
waits for every proxy, then for every recorder (a proxy that met its flush deadline leaves its
recorder finishing in the background), and prints per round: how many recordings are
complete (every frame stored, ``frames_lost`` 0, ``status`` exited), the slowest proxy's
time, the time until the last recorder was done, and what the proxies said on stderr.

The bounded version runs in the test suite (tests/record/test_soak.py). Not a product
feature; the exit status is 1 if any round left a recording incomplete.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = Path(__file__).parents[1] / "support" / "agents" / "fake_agent.py"
# A busy loop at normal priority for argv[1] seconds (the load the recorders compete with).
HOG = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end: pass\n"
)
FRAMES_IN = 500


def _round(folder: Path, options: argparse.Namespace) -> tuple[int, float, float, str]:
    db = folder / "r.sqlite"
    hogs = [
        subprocess.Popen([sys.executable, "-c", HOG, str(options.hog_seconds)])
        for _ in range(options.hogs)
    ]
    started = time.monotonic()
    agent = ["drip", str(options.frames), str(options.group), str(options.pause_ms)]
    proxies = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "acp_proxy",
                "record",
                "--db",
                str(db),
                "--label",
                f"p{n}",
                "--grace",
                "600",
                "--",
                sys.executable,
                str(AGENT),
                *agent,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(options.proxies)
    ]
    sent = b"".join(b'{"jsonrpc":"2.0","method":"_in","params":{"n":%d}}\n' % n
                    for n in range(FRAMES_IN))  # fmt: skip
    said = b"".join(p.communicate(sent)[1] for p in proxies).decode(errors="replace")
    proxies_done = time.monotonic() - started
    while True:
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT status, frames_lost, (SELECT count(*) FROM frame f "
            "WHERE f.connection_id = c.id) FROM connection c"
        ).fetchall()
        con.close()
        if all(status != "running" for status, _, _ in rows):
            break
        time.sleep(0.2)
    recorders_done = time.monotonic() - started
    for hog in hogs:
        hog.kill()
        hog.wait()
    expected = options.frames + FRAMES_IN
    complete = sum(
        1 for status, lost, stored in rows if (status, lost, stored) == ("exited", 0, expected)
    )
    return complete, proxies_done, recorders_done, said


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--proxies", type=int, default=8)
    parser.add_argument("--frames", type=int, default=7000)
    parser.add_argument("--hogs", type=int, default=3)
    parser.add_argument("--hog-seconds", type=float, default=30.0)
    parser.add_argument("--group", type=int, default=20)
    parser.add_argument("--pause-ms", type=float, default=10.0)
    options = parser.parse_args(args)
    failed = False
    for number in range(1, options.rounds + 1):
        folder = Path(tempfile.mkdtemp(prefix="acp-soak-"))
        try:
            complete, proxies_done, recorders_done, said = _round(folder, options)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        failed = failed or complete < options.proxies
        lines = sorted({line for line in said.splitlines() if line})
        print(
            f"round {number}: {complete}/{options.proxies} complete, proxies done after "
            f"{proxies_done:.1f} s, recorders after {recorders_done:.1f} s"
        )
        for line in lines:
            print(f"  said: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
