"""Benchmark: redacting a 100,000-frame recording (``acp-proxy redact`` without the CLI start).

Not collected by pytest. Run it from the repository root:

    .venv/bin/python -m tests.perf.bench_redact [--frames 100000] [--secrets]

The recording is tests/perf/busy_recording.py's busy v2 conversation (prompt turns, tool calls,
plans, long runs of agent message chunks). ``--secrets`` puts an API key, an e-mail address
and a home path in every prompt and tool call, so about a tenth of the frames change. Prints
the seconds spent producing the verified, redacted JSONL export (redaction and the verify pass
over every line).
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_proxy.share.redact import Redactor
from acp_proxy.share.redaction_io import finder_for, redacted_export
from acp_proxy.share.verify import Verifier
from acp_proxy.store import readers as store_read
from tests.perf.busy_recording import build
from tests.support.fixtures_checks import turn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--secrets", action="store_true")
    options = parser.parse_args()
    make_turn: Callable[[int], list[Any]] = turn
    if options.secrets:

        def seeded(n: int) -> list[tuple[object, bytes]]:
            secret = f" sk-proj-{'Ab3' * 10} bob@example.com /home/alice/w ".encode()
            return [
                (d, data.replace(b"word ", secret, 1) if b"word" in data and i < 8 else data)
                for i, (d, data) in enumerate(turn(n))
            ]

        make_turn = seeded
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "bench.sqlite"
        frames = build(db_path, options.frames, make_turn)
        db = store_read.open_for_reading(db_path)
        env = {"HOME": "/home/alice", "USER": "alice", "MY_API_TOKEN": "not-in-the-recording"}
        finder = finder_for({**os.environ, **env})
        redactor = Redactor(finder)
        out = io.BytesIO()
        start = time.perf_counter()
        leaks = redacted_export(db, 1, redactor, Verifier(finder), out)
        elapsed = time.perf_counter() - start
        print(
            f"redacted {frames} frames in {elapsed:.2f} s ({elapsed / frames * 1e6:.1f} us/frame);"
            f" placeholders {redactor.counts}; output {len(out.getvalue()) / 1e6:.1f} MB;"
            f" leaks after redaction: {len(leaks)}"
        )


if __name__ == "__main__":
    main()
