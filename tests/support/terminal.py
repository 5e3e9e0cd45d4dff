"""Running acp-proxy on a real pty: the one helper behind the terminal tests.

Rules: the output is read while the command runs (a pty holds only a few kilobytes: waiting for
the end first would deadlock a long listing), until every writer of the pty has gone, within a
deadline; the process never outlives the call. ``env`` changes the test's own environment: a
value of ``None`` removes that variable (``COLUMNS``, ``NO_COLOR`` ...), so what a terminal
says (its window size) is not overridden by what the test runner happens to have set.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from tests.support.processes import RUN_S, acp_proxy_argv


@dataclass(frozen=True)
class OnTerminal:
    returncode: int
    output: bytes  # what the terminal received, as written (b"\r\n" unless keep_newlines)


def on_pty(
    *args: str, env: Mapping[str, str | None] | None = None, columns: int | None = None,
    stderr_too: bool = False, keep_newlines: bool = False, timeout: float = RUN_S,
) -> OnTerminal:  # fmt: skip
    """``python -m acp_proxy ARGS`` with stdout (and stderr, with ``stderr_too``) on a pty
    ``columns`` wide; ``keep_newlines`` turns off the terminal's own b"\\n" -> b"\\r\\n"."""
    environ = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    leader, follower = pty.openpty()
    if columns is not None:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    if keep_newlines:
        attributes = termios.tcgetattr(follower)
        attributes[1] &= ~termios.ONLCR
        termios.tcsetattr(follower, termios.TCSANOW, attributes)
    deadline = time.monotonic() + timeout
    try:
        process = subprocess.Popen(
            acp_proxy_argv(*args), stdin=subprocess.DEVNULL, stdout=follower,
            stderr=follower if stderr_too else subprocess.DEVNULL, env=environ,
        )  # fmt: skip
    finally:
        os.close(follower)  # the child holds its own copy: EOF comes when it has gone
    try:
        output = _read_to_end(leader, deadline)
        returncode = process.wait(timeout=max(deadline - time.monotonic(), 0.1))
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    return OnTerminal(returncode, output)


def _read_to_end(leader: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the command still wrote to its terminal after its deadline: {chunks}")
        ready, _, _ = select.select([leader], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer of the pty has gone and it is drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
