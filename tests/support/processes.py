"""Running acp-proxy as a process, and waiting for processes the tests start indirectly.

- ``run_to_end`` is the one way a test runs a command and waits for it: output captured, stdin
  closed unless ``input`` is given, a timeout always; ``acp_proxy`` runs ``python -m acp_proxy
  ARGS`` so.
- ``started`` is the one way a test keeps a process running while it talks to it: whatever
  the test asserts, the process is killed (if still running) and waited for at the end.
- ``wait_for_pid`` and ``assert_gone`` poll for processes the tests cannot wait on (an agent
  behind replay, re-parented to init).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import until

WAIT_S = 20
RUN_S = 60


def acp_proxy_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "acp_proxy", *args]


def run_to_end(
    argv: Sequence[str | Path], *, input: bytes | str | None = None, text: bool = True,
    timeout: float = RUN_S, check: bool = False, **options: Any,
) -> subprocess.CompletedProcess[Any]:  # fmt: skip
    """Run ``argv`` to its end (``options``: cwd, env ...): output captured, stdin closed unless
    ``input`` is given, a timeout always. The caller checks the status, or asks ``check``: then
    a status other than 0 fails the test with the command's stderr."""
    if input is None:
        options.setdefault("stdin", subprocess.DEVNULL)
    done: subprocess.CompletedProcess[Any] = subprocess.run(  # type: ignore[call-overload]
        argv, input=input, capture_output=True, text=text, timeout=timeout, check=False,
        **options,
    )  # fmt: skip
    if check and done.returncode != 0:
        pytest.fail(f"{argv} exited with status {done.returncode}:\n{done.stderr}")
    return done


def acp_proxy(
    *args: str, input: bytes | str | None = None, text: bool = True, timeout: float = RUN_S,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:  # fmt: skip
    """``python -m acp_proxy ARGS`` to its end, as ``run_to_end`` runs it."""
    return run_to_end(acp_proxy_argv(*args), input=input, text=text, timeout=timeout, **options)


@contextlib.contextmanager
def started(argv: Sequence[str | Path], **options: Any) -> Iterator[subprocess.Popen[Any]]:
    """``argv`` running for the ``with`` block (``options`` as ``subprocess.Popen`` takes them:
    pipes, cwd, env ...); at its end the process is killed if it still runs, waited for, and its
    pipes closed, so no test leaves a process behind, whatever it asserted."""
    options.setdefault("stdin", subprocess.DEVNULL)
    process = subprocess.Popen(argv, **options)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


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
