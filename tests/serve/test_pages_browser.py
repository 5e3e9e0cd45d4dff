"""The inspector in a real browser on recordings made without a process: hostile text and diff.

Hostile recorded text (``<script>``, ``onerror``, ``javascript:`` URLs, terminal escape
sequences) must show as text in every view and never run; a control page with the same
payload inserted as markup proves that this browser would run it. Two recordings that differ
in one frame show that frame as the first divergence, side by side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, ERR, line, write_recording
from tests.support.ui_server import screenshot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

SCRIPT = "<script>document.body.setAttribute('data-pwned','script')</script>"
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">"
JS_URL = "javascript:document.body.setAttribute('data-pwned','link')"
ESCAPES = "\x1b[31mred\x1b[0m \x1b]8;;http://x/\x07link\x1b]8;;\x07 \r\x00"
HOSTILE = f"look {SCRIPT} and {IMG}"


def exchange(reply: str) -> list[tuple[Any, bytes]]:
    return [
        (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": 1, "clientInfo": {"name": IMG, "version": "1"}}})),
        (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": 1, "agentInfo": {"name": SCRIPT, "version": "1"}}})),
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {
            "sessionId": "s", "prompt": [
                {"type": "text", "text": HOSTILE},
                {"type": "resource_link", "name": JS_URL, "uri": JS_URL}]}})),
        (A2C, update("s", {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                           "content": {"type": "text", "text": "Reply: " + HOSTILE}})),
        (A2C, update("s", {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                           "content": {"type": "text", "text": reply}})),
        (A2C, update("s", {"sessionUpdate": "tool_call", "toolCallId": "t", "title": IMG,
                           "status": "completed", "locations": [{"path": JS_URL}],
                           "content": [{"type": "content", "content": {
                               "type": "text", "text": SCRIPT}}]})),
        (A2C, update("s", {"sessionUpdate": SCRIPT, "payload": IMG})),
        (ERR, (ESCAPES + HOSTILE + "\n").encode()),
        (A2C, b'{"jsonrpc":"2.0","method":"x","params":"\xff\xfe ' + SCRIPT.encode() + b'"}\n'),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
    ]  # fmt: skip


def not_pwned(page: Any) -> None:
    assert page.evaluate("document.body.getAttribute('data-pwned')") is None
    assert (
        page.locator(
            "#view script, #detail script, #view img, #detail img, dialog script, dialog img"
        ).count()
        == 0
    )
    assert page.locator('a[href^="javascript:"]').count() == 0


def test_hostile_text_never_runs(db_path: Path, serve_ui: Any, page: Any) -> None:
    write_recording(db_path, exchange("fine"), label="hostile")
    served = serve_ui("--db", str(db_path))

    # The control: the same payload inserted as markup does run in this browser.
    page.set_content(f"<body>{SCRIPT}{IMG}</body>")
    wait_for(lambda: page.evaluate("document.body.getAttribute('data-pwned')"), "the control")

    page.goto(f"{served.url}#view=recordings")
    page.wait_for_selector("#recordings tbody tr")
    assert SCRIPT in page.text_content("#recordings tbody tr")
    not_pwned(page)
    page.goto(f"{served.url}#view=timeline&c=1")
    page.wait_for_selector("#spacer .row")
    rows = page.locator("#spacer .row")
    assert "<script>" in page.text_content("#spacer")
    # Findings of the rule engine and frames that are not clean JSON-RPC are marked in place.
    page.wait_for_selector("#spacer .row.has-finding")
    assert page.locator('#spacer .row.bad[data-seq="9"]').count() == 1
    for index in range(rows.count()):
        rows.nth(index).click()
        page.wait_for_selector("#detail #raw")
        not_pwned(page)
    page.click('#spacer .row[data-seq="8"]')  # the stderr line: escapes shown, not obeyed
    wait_for(lambda: "\\x1b[31m" in (page.text_content("#detail #raw") or ""), "the escapes")
    assert page.locator("#detail #raw .esc").count() >= 4
    assert "\x1b" not in page.text_content("#detail #raw")
    page.click('#spacer .row[data-seq="9"]')  # not UTF-8: \xff\xfe as escapes
    wait_for(lambda: "\\xff\\xfe" in (page.text_content("#detail #raw") or ""), "invalid UTF-8")
    screenshot(page, "hostile")
    for view in ("sequence", "performance", "conversation"):
        page.goto(f"{served.url}#view={view}&c=1")
        page.wait_for_selector("#sequence svg g.msg, #conversation .item, #methods")
        not_pwned(page)
    user = page.locator("#conversation .item.user .body")
    assert JS_URL in user.text_content()
    assert SCRIPT in user.text_content()
    user.click()  # a javascript: URL shown as text is not a link
    assert page.url.startswith(served.url)
    assert IMG in page.text_content("#conversation .item.tool")
    not_pwned(page)
    # The session info, the palette and the insights show the same payloads as text.
    page.keyboard.press("i")
    page.wait_for_selector("#info[open] #versions")
    assert SCRIPT in page.text_content("#info #versions")
    assert IMG in page.text_content("#info #versions")
    not_pwned(page)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+k")
    page.keyboard.type("script")
    wait_for(lambda: SCRIPT in (page.text_content("#palette ul") or ""), "the palette")
    not_pwned(page)
    page.keyboard.press("Escape")
    page.goto(f"{served.url}#view=performance&c=1")
    page.wait_for_selector("#insights li")
    not_pwned(page)


def test_diff_shows_the_differing_frame(tmp_path: Path, serve_ui: Any, page: Any) -> None:
    db = tmp_path / "two.sqlite"
    write_recording(db, exchange("the same"), label="before")
    write_recording(db, exchange("changed"), label="after")
    served = serve_ui("--db", str(db))
    page.goto(f"{served.url}#view=diff&a=1&b=2")
    page.wait_for_selector("#diff tr.divergence")
    verdict = page.text_content("#verdict")
    assert "First divergence: a2c message 3" in verdict
    assert "(A frame 5, B frame 5)" in verdict
    assert "$.params.update.content.text" in verdict
    cells = page.eval_on_selector_all(
        "#diff tr.divergence td pre", "cells => cells.map(c => c.textContent)"
    )
    assert '"the same"' in cells[0]
    assert '"changed"' in cells[1]
    assert page.locator("#diff tr.differ").count() == 1
    # The field that differs, with both values, under the pair.
    change = page.eval_on_selector_all(
        "#diff tr.changes td table tr td", "cells => cells.map(c => c.textContent)"
    )
    assert change == ["$.params.update.content.text", '"the same"', '"changed"']
    # The same agent, client and capabilities on both sides; latency per method in A and B.
    assert page.locator("#metadata tr").count() >= 5
    assert page.locator("#metadata tr.differ").count() == 0
    methods = page.eval_on_selector_all(
        "#latency-deltas tbody tr td:first-child", "cells => cells.map(c => c.textContent)"
    )
    assert methods == ["initialize", "session/prompt"]
    screenshot(page, "diff")
    page.select_option('select[name="b"]', "1")
    wait_for(lambda: "The same" in (page.text_content("#verdict") or ""), "equal recordings")
    assert "b=1" in page.url


def test_a_remote_frame_detail_shows_its_stream(db_path: Path, serve_ui: Any, page: Any) -> None:
    from tests.support.remote_recordings import http_exchanges, http_frames, write_remote

    write_remote(db_path, "http", http_exchanges(), http_frames())
    served = serve_ui("--db", str(db_path))
    page.goto(f"{served.url}#view=timeline&c=1&f=2")
    page.wait_for_selector("#detail #carrier")
    shown = page.text_content("#detail #carrier")
    assert shown == "via HTTP POST answer body, exchange 1, status 200"
