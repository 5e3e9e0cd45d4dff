"""Running acp-proxy as a process, and waiting for processes the tests start indirectly.

- ``acp_proxy`` is the one way a test runs ``python -m acp_proxy ARGS`` and waits for it: output
  captured, stdin closed unless ``input`` is given, a timeout always.
- ``wait_for_pid`` and ``assert_gone`` poll for processes the tests cannot wait on (an agent
  behind replay, re-parented to init).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.polling import until

WAIT_S = 20
RUN_S = 60


def acp_proxy_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "acp_proxy", *args]


def acp_proxy(
    *args: str, input: bytes | str | None = None, text: bool = True, timeout: float = RUN_S,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:  # fmt: skip
    """``python -m acp_proxy ARGS`` to its end (``options``: cwd, env ...); never checks the
    status, the caller does."""
    if input is None:
        options.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        acp_proxy_argv(*args), input=input, capture_output=True, text=text, timeout=timeout,
        check=False, **options,
    )  # fmt: skip


def wait_for_pid(pidfile: Path) -> int:
    """The pid a process wrote to ``pidfile`` (whole: it is renamed into place)."""
    until(pidfile.exists, f"a pid in {pidfile}", WAIT_S)
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
    until(lambda: not exists(pid), f"the end of process {pid}", WAIT_S)
