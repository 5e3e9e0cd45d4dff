"""The HTML export in a real browser (headless Chromium, installed by .ci/install-chromium).

Recorded content carrying ``<script>`` and ``<img onerror>`` must show as text and never run.
A control page with the same payload unescaped proves the browser here does run such code, so
the check would catch a regression. Without chromium the browser tests skip (fail in CI).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, ERR, line, write_recording
from tests.support.processes import run_to_end

SCRIPT = "<script>document.body.setAttribute('data-pwned','script')</script>"
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">"
HOSTILE = f"look {SCRIPT} and {IMG}"

EXCHANGE = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientInfo": {"name": IMG, "version": "1"}}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {
        "sessionId": "s", "prompt": [{"type": "text", "text": HOSTILE}]}})),
    (A2C, update("s", {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                       "content": {"type": "text", "text": "Reply: " + HOSTILE}})),
    (A2C, update("s", {"sessionUpdate": "tool_call", "toolCallId": "t", "title": IMG,
                       "status": "completed", "content": [{"type": "content", "content": {
                           "type": "text", "text": SCRIPT}}]})),
    (A2C, update("s", {"sessionUpdate": SCRIPT, "payload": IMG})),
    (ERR, (HOSTILE + "\n").encode()),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
]  # fmt: skip


def export_html(db_path: Path, out: Path) -> str:
    write_recording(db_path, EXCHANGE, label="hostile")
    result = CliRunner().invoke(cli, ["export", "hostile", "-o", str(out), "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    return out.read_text()


def test_html_is_self_contained_and_escaped(db_path: Path, tmp_path: Path) -> None:
    page = export_html(db_path, tmp_path / "page.html")
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page
    assert "<script" not in page
    assert "<img" not in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "&lt;script&gt;document.body.setAttribute(&#x27;data-pwned&#x27;" in page


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail("chromium is missing: .ci/install-chromium installs it")
        pytest.skip("chromium is missing: run .ci/install-chromium")
    return found


def dump_dom(chromium: str, page: Path, profile: Path) -> str:
    argv = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        f"--user-data-dir={profile}", "--virtual-time-budget=2000", "--dump-dom", page.as_uri(),
    ]  # fmt: skip
    done = run_to_end(argv, timeout=50, check=True)
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


def test_the_browser_runs_an_unescaped_payload(chromium: str, tmp_path: Path) -> None:
    control = tmp_path / "control.html"
    control.write_text(f"<!DOCTYPE html><html><body><p>{IMG}</p></body></html>")
    assert 'data-pwned="img"' in dump_dom(chromium, control, tmp_path / "profile")


def test_recorded_markup_shows_as_text_and_never_runs(
    chromium: str, db_path: Path, tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    export_html(db_path, page)
    dom = dump_dom(chromium, page, tmp_path / "profile")
    assert "data-pwned=" not in dom  # neither the script nor the onerror handler ran
    assert "<script" not in dom
    assert "<img" not in dom
    # The conversation rendered, with the payload as visible text.
    assert "Reply: look &lt;script&gt;document.body.setAttribute('data-pwned','script')" in dom
    assert '<h3>Turn 1 <a class="frame"' in dom
    assert "Turn ended: end_turn" in dom
    assert dom.count("&lt;img src=x onerror=") >= 4  # prompt, reply, tool title, frames
