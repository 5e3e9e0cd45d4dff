"""Waiting for processes the tests start indirectly (an agent behind replay), by polling."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

WAIT_S = 20
POLL_S = 0.01


def wait_for_pid(pidfile: Path) -> int:
    """The pid a process wrote to ``pidfile`` (whole: it is renamed into place)."""
    deadline = time.monotonic() + WAIT_S
    while not pidfile.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"no pid in {pidfile} after {WAIT_S}s")
        time.sleep(POLL_S)
    return int(pidfile.read_text())


def exists(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def assert_gone(pid: int) -> None:
    """``pid`` is gone now, or within moments (the kernel reaps a re-parented process)."""
    deadline = time.monotonic() + WAIT_S
    while exists(pid):
        if time.monotonic() > deadline:
            pytest.fail(f"process {pid} still runs")
        time.sleep(POLL_S)
