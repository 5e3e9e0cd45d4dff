"""Fake agents for the edge cases real agents never produce. ``python fake_agent.py MODE ...``

Modes (standard library only, unbuffered binary stdio):
- ``echo``: copy stdin to stdout as it arrives; ``echo-stderr`` also says each chunk on stderr.
- ``emit FILE``: write FILE's bytes to stdout, then copy stdin to ``FILE.in`` until EOF.
- ``exit N``: read one line, then exit with status N.
- ``kill-self SIG``: read one line, then die from signal SIG.
- ``crash``: write a line and half of another, then raise (exit 1).
- ``deaf``: never read stdin, ignore SIGTERM if ``--ignore-term``; runs until killed.
- ``big N``: write half of an N-byte line, wait for a line on stdin, write the rest.
- ``on-term``: write "ready" on stderr, wait for SIGTERM, answer a frame on stdout, exit 0.
- ``ticks N``: write N frames, then block reading stdin until EOF.
- ``pidfile FILE``: write its pid to FILE (whole, once it exists), then sleep until a signal
  ends it (SIGINT, SIGTERM and SIGHUP as the system's default; ignored with ``--ignore-all``).
- ``drip N GROUP MS``: write N frames, GROUP at a time, MS milliseconds apart (a long
  conversation's pace: many small batches to record), then read stdin until EOF.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def read_line() -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            break
        data += chunk
    return data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> int:
    mode = argv[0]
    if mode in ("echo", "echo-stderr"):
        while chunk := os.read(0, 65536):
            write_all(1, chunk)
            if mode == "echo-stderr":
                write_all(2, b"agent got %d bytes\n" % len(chunk))
        return 0
    if mode == "emit":
        with open(argv[1], "rb") as source:
            write_all(1, source.read())
        with open(argv[1] + ".in", "wb") as sink:
            while chunk := os.read(0, 65536):
                sink.write(chunk)
        return 0
    if mode == "exit":
        read_line()
        return int(argv[1])
    if mode == "kill-self":
        read_line()
        os.kill(os.getpid(), int(argv[1]))
        time.sleep(10)
        return 99
    if mode == "crash":
        write_all(1, b'{"jsonrpc":"2.0","method":"session/update","params":{}}\n{"jsonrpc":')
        write_all(2, b"about to crash\n")
        raise RuntimeError("fake agent crashed mid-stream")
    if mode == "deaf":
        if "--ignore-term" in argv:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        write_all(2, b"deaf agent ready\n")
        while True:
            time.sleep(3600)
    if mode == "big":
        size = int(argv[1])
        half = size // 2
        write_all(1, b'{"data":"' + b"x" * (half - 9))
        read_line()
        write_all(1, b"y" * (size - half - 3) + b'"}\n')
        return 0
    if mode == "on-term":
        got: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, _frame: got.append(signum))
        write_all(2, b"ready\n")
        while not got:
            signal.pause()
        write_all(1, b'{"jsonrpc":"2.0","method":"_bye","params":{}}\n')
        return 0
    if mode == "ticks":
        for n in range(int(argv[1])):
            write_all(1, b'{"jsonrpc":"2.0","method":"_tick","params":{"n":%d}}\n' % n)
        while os.read(0, 65536):
            pass
        return 0
    if mode == "pidfile":
        disposition = signal.SIG_IGN if "--ignore-all" in argv else signal.SIG_DFL
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, disposition)
        with open(argv[1] + ".tmp", "w") as pid:
            pid.write(str(os.getpid()))
        os.replace(argv[1] + ".tmp", argv[1])
        while True:
            time.sleep(3600)
    if mode == "drip":
        count, group, pause = int(argv[1]), int(argv[2]), float(argv[3]) / 1000
        for start in range(0, count, group):
            frames = range(start, min(count, start + group))
            write_all(1, b"".join(b'{"jsonrpc":"2.0","method":"_drip","params":{"n":%d}}\n' % n
                                  for n in frames))  # fmt: skip
            time.sleep(pause)
        while os.read(0, 65536):
            pass
        return 0
    write_all(2, f"unknown mode {mode}\n".encode())
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
