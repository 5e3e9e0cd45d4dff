"""Fixtures of the inspector's tests: a real ``acp-proxy ui`` process and a real browser (the
machinery behind them is tests/support/ui_server.py).

The server runs as ``python -m acp_proxy ui`` (this checkout first on PYTHONPATH), and its
address is read from its stderr, as a user would. The browser is Debian's chromium
(``.ci/install-chromium``) driven by Playwright, which never downloads a browser of its own.
``ACP_PROXY_SCREENSHOTS=DIR`` makes the browser tests save PNGs of each view there (docs/ui
holds the committed ones); without it nothing is written outside the test's folders.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.ui_server import (
    CHROMIUM,
    CHROMIUM_ARGS,
    Served,
    in_ci,
    start_ui,
    stop_ui,
)


@pytest.fixture
def serve_ui(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(*args: str) -> Served:
        served = start_ui(list(args), tmp_path / f"ui-{len(started)}.log")
        started.append(served)
        return served

    yield start
    for served in started:
        stop_ui(served)


@pytest.fixture(scope="session")
def chromium() -> str:
    if shutil.which("chromium") is None or not Path(CHROMIUM).exists():
        if in_ci():
            pytest.fail("chromium is missing: .ci/install-chromium installs it")
        pytest.skip("chromium is missing: run .ci/install-chromium")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    # Per module: Playwright's sync API keeps an event loop running in this thread while it is
    # open, and other modules here (the MCP server's tests) call asyncio.run.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 820})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.errors = errors
    yield opened
    context.close()
    assert not errors, f"the page raised: {errors}"
