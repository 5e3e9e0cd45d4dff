"""The inspector's tests' machinery: a real ``acp-proxy ui`` process (its address read from its
stderr, as a user would), waiting for what a page or a server shows, and screenshots.

``launch_ui`` is the one way a ``ui`` process is started, by the tests (``start_ui``: a failure
fails the test) and by the benchmark (tests/perf/bench_ui.py, which may start another
checkout's: ``source``).

``ACP_PROXY_SCREENSHOTS=DIR`` makes the browser tests save PNGs of each view there (docs/ui
holds the committed ones); without it nothing is written outside the test's folders.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ADDRESS = re.compile(rb"acp-proxy: ui at (http://\S+)")
START_S = 30.0


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def env(source: Path = REPO) -> dict[str, str]:
    """The environment of a process that runs ``source``'s acp_proxy."""
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(source), environ.get("PYTHONPATH")) if p
    )
    return environ


def wait_for(
    check: Callable[[], Any],
    what: str,
    timeout: float = 10.0,
    fail: Callable[[], Any] | None = None,
) -> Any:
    """Poll ``check`` until it returns something true, or fail after ``timeout`` seconds
    (saying what ``fail`` returns then)."""  # fmt: skip
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            seen = f" ({fail()})" if fail is not None else ""
            pytest.fail(f"timed out after {timeout}s waiting for {what}{seen}")
        time.sleep(0.02)


@dataclass
class Served:
    url: str  # http://127.0.0.1:PORT/TOKEN/
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])

    @property
    def token(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[1]


class UiFailed(RuntimeError):
    """The ``ui`` process exited, or said no address in time."""


def launch_ui(
    args: list[str], log: Path, *, source: Path = REPO, timeout: float = START_S
) -> Served:
    """``python -m acp_proxy ui --no-open ARGS`` of the checkout ``source``, its stderr in
    ``log``; returns once it has said its address."""
    argv = [sys.executable, "-m", "acp_proxy", "ui", "--no-open", *args]
    with log.open("wb") as sink:
        # ``python -m`` looks in the working directory first: the checkout's own package.
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink,
            env=env(source), cwd=source,
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while not (found := ADDRESS.search(log.read_bytes())):
        if process.poll() is not None:
            raise UiFailed(f"acp-proxy ui exited {process.returncode}: {log.read_text()}")
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise UiFailed(f"acp-proxy ui said no address within {timeout:g}s: {log.read_text()}")
        time.sleep(0.02)
    return Served(found.group(1).decode(), process, log)


def start_ui(args: list[str], log: Path) -> Served:
    """``launch_ui`` for a test: a server that does not start fails the test."""
    try:
        return launch_ui(args, log)
    except UiFailed as error:
        pytest.fail(str(error))


def stop_ui(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()


# For the committed pictures only: this checkout's and the test's folders shown as a user's.
_NEUTRAL_PATHS = """([checkout, temporary]) => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        node.textContent = node.textContent.split(checkout).join("/home/me/acp-proxy")
            .replace(new RegExp(temporary, "g"), "/home/me/project");
    }
}"""


def screenshot(page: Any, name: str) -> None:
    """Save a PNG of the page under ``$ACP_PROXY_SCREENSHOTS`` (only when it is set)."""
    folder = os.environ.get("ACP_PROXY_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.evaluate(_NEUTRAL_PATHS, [str(REPO), r'/tmp/pytest-of-[^\s"]*'])
        page.screenshot(path=str(Path(folder) / f"{name}.png"))
