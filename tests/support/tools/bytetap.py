"""bytetap: a tiny transparent byte relay that logs what crosses it, for tests only.

Usage: ``python bytetap.py [--stderr] LOGDIR -- CMD [ARGS...]``

It spawns CMD and relays, chunk by chunk with raw ``os.read``/``os.write`` (no buffering,
no framing, no decoding):

* our stdin  -> CMD's stdin,  each chunk also appended to ``LOGDIR/in.bin``;
* CMD's stdout -> our stdout, each chunk also appended to ``LOGDIR/out.bin``;
* CMD's stderr is inherited untouched, unless ``--stderr`` is given: then it is relayed to our
  stderr the same way and logged to ``LOGDIR/err.bin``.

Each chunk is logged *before* it is forwarded, so whatever a peer has received is already in
the log. On EOF of our stdin the child's stdin is closed. SIGTERM, SIGINT and SIGHUP are passed
on to the child (the tap stays alive until the child's output ends, so nothing is lost). When
the child is gone and its output drained, its exit status is written to ``LOGDIR/status`` and
the tap exits the same way: with the same code, or killed by the same signal.

Placing one tap in front of a proxy and one behind it lets a test compare the bytes on both
sides of the proxy, in both directions, within one run. Only the standard library is used, so
any Python 3.11+ can run it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

CHUNK = 65536
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (pipes may take less per call)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def pump(
    src: int, dst: int, log: int, on_eof: Callable[[], None], on_broken: Callable[[], None]
) -> None:
    """Copy ``src`` to ``dst`` chunk by chunk, logging each chunk first, until EOF.

    At EOF ``on_eof`` runs (to pass the EOF on). If ``dst`` breaks (its reader left),
    ``on_broken`` runs instead: it closes ``src`` so that the writer on the other side sees a
    broken pipe too, as it would without the tap.
    """
    try:
        while chunk := os.read(src, CHUNK):
            write_all(log, chunk)
            write_all(dst, chunk)
    except BrokenPipeError:
        on_broken()
        return
    on_eof()


def nothing() -> None:
    """Leave the stream as it is."""


def parse_args(argv: list[str]) -> tuple[bool, Path, list[str]]:
    tap_stderr = False
    if argv[:1] == ["--stderr"]:
        tap_stderr = True
        argv = argv[1:]
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: bytetap.py [--stderr] LOGDIR -- CMD [ARGS...]")
    return tap_stderr, Path(argv[0]), argv[2:]


def open_log(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)


def main(argv: list[str]) -> None:
    tap_stderr, logdir, cmd = parse_args(argv)
    logdir.mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if tap_stderr else None,
        bufsize=0,
    )
    assert child.stdin is not None
    assert child.stdout is not None

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)

    # Our stdin may never reach EOF (the parent may keep it open after the child is gone), so its
    # pump is a daemon thread that nobody waits for; the output pumps decide when we are done.
    stdin = sys.stdin.fileno()
    threading.Thread(
        target=pump,
        args=(stdin, child.stdin.fileno(), open_log(logdir / "in.bin"), child.stdin.close, nothing),
        daemon=True,
    ).start()
    outputs = [(child.stdout, sys.stdout.fileno(), "out.bin")]
    if child.stderr is not None:
        outputs.append((child.stderr, sys.stderr.fileno(), "err.bin"))
    drains = [
        threading.Thread(
            target=pump,
            args=(source.fileno(), sink, open_log(logdir / name), nothing, source.close),
        )
        for source, sink, name in outputs
    ]
    for thread in drains:
        thread.start()
    for thread in drains:
        thread.join()
    status = child.wait()
    (logdir / "status").write_text(f"{status}\n")
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
