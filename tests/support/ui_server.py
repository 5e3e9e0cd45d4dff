"""The inspector's tests' machinery: a real ``acp-proxy ui`` process (its address read from its
stderr, as a user would), waiting for what a page or a server shows, and screenshots.

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


def env() -> dict[str, str]:
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), environ.get("PYTHONPATH")) if p)
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


def start_ui(args: list[str], log: Path) -> Served:
    argv = [sys.executable, "-m", "acp_proxy", "ui", "--no-open", *args]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink, env=env()
        )

    def address() -> str | None:
        if process.poll() is not None:
            pytest.fail(f"acp-proxy ui exited {process.returncode}: {log.read_text()}")
        match = ADDRESS.search(log.read_bytes())
        return match.group(1).decode() if match else None

    url = wait_for(address, "the ui's address on stderr", START_S)
    return Served(url, process, log)


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
