"""The inspector used with the keyboard alone, its layout at two window sizes, and a
100,000-frame recording, in a real browser.

Keyboard: every step below is a key press (no click): the list, the timeline's selection
(``aria-selected``), the detail, the filter, session info, the shortcuts, the palette, the
views by number and playback. Layout: at 1400x900 and 1024x768 no view is wider than the
window, the header stays one line and the method column holds ``session/request_permission``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.protocol.acp import Direction
from tests.support.fixtures_acp import V1_CONVERSATION, update
from tests.support.helpers import A2C, C2A, line, write_recording
from tests.support.ui_server import screenshot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

VIEWS = ["recordings", "timeline", "sequence", "conversation", "performance", "diff"]
LONG_COMMAND = "my-agent --with a --very --long --command line " * 6
# A request nobody answers: its latency says so.
WAITING = (C2A, line({"jsonrpc": "2.0", "id": 9, "method": "session/prompt", "params": {
    "sessionId": "sess_1", "prompt": [{"type": "text", "text": "still waiting"}]}}))  # fmt: skip


# What sticks out of the view on the right (to say so when a test fails).
WIDER = """() => { const view = document.querySelector('#view');
    const edge = view.getBoundingClientRect().left + view.clientWidth;
    return [...document.querySelectorAll('#view *')].filter(
        n => n.getBoundingClientRect().right > edge + 1).slice(0, 5).map(
        n => n.tagName + ' ' + (n.id || '') + ' '
            + String(n.className.baseVal ?? n.className)); }"""


def selected(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        '#view [aria-selected="true"]', "nodes => nodes.map(n => n.dataset.seq || n.dataset.id)"
    )


def hash(page: Any) -> str:
    return str(page.evaluate("location.hash"))


def press(page: Any, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def test_keyboard_only(db_path: Path, serve_ui: Any, page: Any) -> None:
    write_recording(db_path, [*V1_CONVERSATION, WAITING], label="keys")
    served = serve_ui("--db", str(db_path))
    page.goto(served.url)
    page.wait_for_selector("#recordings tbody tr")

    # The list: j selects the first recording, Enter opens its timeline.
    press(page, "j")
    assert selected(page) == ["1"]
    press(page, "Enter")
    wait_for(lambda: "view=timeline" in hash(page) and "c=1" in hash(page), "the timeline")
    page.wait_for_selector("#spacer .row")

    # j, j, k: the second row is selected (and only it); Enter opens it; Esc closes it.
    press(page, "j", "j", "j", "k")
    wait_for(lambda: selected(page) == ["2"], "the second row selected")
    assert page.locator('#spacer .row[aria-selected="true"]').count() == 1
    press(page, "Enter")
    page.wait_for_selector('#detail[aria-label="frame 2"] h2')
    assert "f=2" in hash(page)
    # With the detail open, the selection moves it along.
    press(page, "ArrowDown")
    page.wait_for_selector('#detail[aria-label="frame 3"] h2')
    press(page, "Escape")
    wait_for(lambda: page.locator("#detail").is_hidden(), "the detail closed")
    assert "f=" not in hash(page)

    # The waiting request says so in its latency.
    waiting = page.locator('#spacer .row[data-seq="17"] .cell.lat')
    assert waiting.text_content() in ("pending", "unanswered")

    # / focuses the filter; typing filters; Esc leaves the field, keys are the page's again.
    press(page, "/")
    assert page.evaluate("document.activeElement.name") == "text"
    page.keyboard.type("still waiting")
    wait_for(
        lambda: "text=still" in hash(page),
        "the filter in the URL",
        fail=lambda: (hash(page), page.input_value("#filters input[name=text]")),
    )
    wait_for(lambda: page.locator("#spacer .row").count() == 1, "one row")
    press(page, "Escape")
    assert page.evaluate("document.activeElement.name") is None
    press(page, "/")
    page.keyboard.press("Control+a")
    page.keyboard.press("Backspace")
    press(page, "Escape")
    wait_for(lambda: page.locator("#spacer .row").count() > 1, "every row again")

    # i: the session info, both sides' capabilities side by side.
    press(page, "i")
    page.wait_for_selector("#info[open] #capabilities")
    matrix = page.text_content("#info #capabilities")
    assert "fs.readTextFile" in matrix
    assert "loadSession" in matrix
    assert page.text_content("#info #negotiated") == "1"
    assert "agent-x 2.0" in page.text_content("#info #versions")
    assert "_zed.dev/ping" in page.text_content("#info")
    screenshot(page, "info")
    press(page, "Escape")
    wait_for(lambda: page.locator("#info[open]").count() == 0, "the panel closed")

    # ?: every shortcut listed.
    press(page, "?")
    shortcuts = page.text_content("#help[open] #shortcuts")
    for key in ("j", "k", "Enter", "Esc", "/", "i", "Ctrl+K", "?"):
        assert key in shortcuts
    screenshot(page, "shortcuts")
    press(page, "Escape")

    # Ctrl+K: the palette jumps to a method (and to a frame by its number).
    press(page, "Control+k")
    page.wait_for_selector("#palette[open] input:focus")
    page.keyboard.type("request_perm")
    wait_for(lambda: "session/request_permission" in page.text_content("#palette ul"), "found")
    screenshot(page, "palette")
    press(page, "Enter")
    wait_for(lambda: "method=session%2Frequest_permission" in hash(page), "the method filter")
    methods = "cs => cs.map(c => c.textContent)"
    wait_for(
        lambda: (
            set(page.eval_on_selector_all("#spacer .row .cell.method", methods))
            == {"session/request_permission"}
        ),
        "its rows only",
    )
    press(page, "Control+k")
    page.keyboard.type("5")
    press(page, "Enter")
    page.wait_for_selector('#detail[aria-label="frame 5"] h2')

    # Numbers switch views; each view moves its own selection.
    for number, view in enumerate(VIEWS, start=1):
        if view in ("recordings", "diff"):
            continue
        press(page, str(number))
        wait_for(lambda v=view: f"view={v}" in hash(page), view)
        page.wait_for_selector(f'#view[data-view="{view}"]')
        if view == "timeline":
            continue
        selector = {"sequence": "g.msg", "conversation": ".item", "performance": "g.call"}[view]
        page.wait_for_selector(f"#view {selector}")
        press(page, "j")
        wait_for(lambda: selected(page), f"a selection in {view}")
        press(page, "Enter")
        page.wait_for_selector("#detail h2")
        press(page, "Escape")

    # Playback: Space plays the timeline at the recorded pace (8x), Space pauses it.
    page.goto(f"{served.url}#view=timeline&c=1")
    page.wait_for_selector("#spacer .row")
    page.select_option("#speed", "8")
    page.focus("#rows")
    press(page, "Space")
    wait_for(lambda: int(page.input_value("#seek")) >= 3, "the play head moving")
    press(page, "Space")
    paused = page.input_value("#seek")
    assert page.text_content("#play") == "▶ play"
    page.wait_for_timeout(300)  # a paused head stays where it is
    assert page.input_value("#seek") == paused
    shown = page.locator("#spacer .row").count()
    assert shown == int(paused) + 1  # only what has been played is shown


def exchange_with_long_command() -> Iterator[tuple[Direction, bytes]]:
    yield from V1_CONVERSATION
    long = {"type": "text", "text": " world" * 400}
    yield A2C, update("sess_1", {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                                 "content": long})  # fmt: skip


@pytest.mark.parametrize(("width", "height"), [(1400, 900), (1024, 768)])
def test_every_view_fits_the_window(
    db_path: Path, serve_ui: Any, browser: Any, width: int, height: int
) -> None:
    first = write_recording(db_path, list(exchange_with_long_command()), label="fits")
    db = sqlite3.connect(db_path)
    db.execute("UPDATE connection SET argv = ?, agent_info = NULL WHERE id = ?",
               (json.dumps(LONG_COMMAND.split()), first))  # fmt: skip
    db.commit()
    db.close()
    write_recording(db_path, V1_CONVERSATION, label="other")
    served = serve_ui("--db", str(db_path))
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        for view in VIEWS:
            page.goto(f"{served.url}#view={view}&c=1&a=1&b=2&f=9")
            page.wait_for_selector(f'#view[data-view="{view}"] > *')
            page.wait_for_timeout(400)  # the view's first answers drawn
            wide = page.evaluate(
                "() => [document.documentElement.scrollWidth, innerWidth,"
                " document.querySelector('#view').scrollWidth,"
                " document.querySelector('#view').clientWidth]"
            )
            assert wide[0] <= wide[1], (view, wide)
            assert wide[2] <= wide[3] + 1, (view, wide, page.evaluate(WIDER))
            # One line of header, however long the agent's command.
            assert page.evaluate("document.querySelector('#top').offsetHeight") < 48, view
            if view == "timeline":
                cell = page.locator('#spacer .row .cell.method:text("session/request_permission")')
                cut = cell.first.evaluate("c => c.scrollWidth > c.clientWidth")
                assert not cut
                assert "ms" in page.text_content("#spacer .row .cell.time >> nth=1")
            if view == "diff":
                box = page.evaluate(
                    "() => { const r = document.querySelector('select[name=b]')"
                    ".getBoundingClientRect(); return [r.right, innerWidth]; }"
                )
                assert box[0] <= box[1]
            if width == 1024 and view == "timeline":
                screenshot(page, "small-window")
        assert not errors, errors
    finally:
        context.close()


def big_recording(frames: int) -> Iterator[tuple[Direction, bytes]]:
    """A prompt answered by ``frames`` chunks, thought and message in turn."""
    yield C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {
        "sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}})  # fmt: skip
    for i in range(frames - 2):
        kind = "agent_thought_chunk" if (i // 3) % 2 else "agent_message_chunk"
        yield A2C, update("s", {"sessionUpdate": kind, "messageId": f"m{i // 3}",
                                "content": {"type": "text", "text": f"w{i} "}})  # fmt: skip
    yield A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})


def test_a_hundred_thousand_frames(db_path: Path, serve_ui: Any, page: Any) -> None:
    write_recording(db_path, big_recording(100_000), label="big")
    served = serve_ui("--db", str(db_path))
    page.goto(f"{served.url}#view=timeline&c=1")
    page.wait_for_selector("#spacer .row")
    # Runs of three chunks are one row each.
    assert page.locator("#spacer .row.run").count() > 10

    # A link into the middle shows the frame's row and its detail.
    middle = 50_001
    page.goto(f"{served.url}#view=timeline&c=1&f={middle}")
    page.wait_for_function(
        """seq => [...document.querySelectorAll('#spacer .row')].some(
            r => Number(r.dataset.seq) <= seq && seq <= Number(r.dataset.last || r.dataset.seq))""",
        arg=middle,
    )
    page.wait_for_selector(f'#detail[aria-label="frame {middle}"] h2')
    press(page, "j")
    assert len(selected(page)) == 1

    # The sequence folds the runs: one arrow per run, not per chunk.
    page.goto(f"{served.url}#view=sequence&c=1")
    page.wait_for_selector("g.msg")
    counts = page.eval_on_selector_all("g.msg", "gs => gs.map(g => Number(g.dataset.count))")
    assert counts[1:4] == [3, 3, 3]
    assert len(counts) <= 400  # one page of arrows, not 100,000

    # The performance view shows the calls at once and the turns as the recording is read.
    page.goto(f"{served.url}#view=performance&c=1")
    page.wait_for_selector("#waterfall g.call", state="attached")
    assert "reading the recording" in page.text_content("#turns-status")
    wait_for(lambda: "reading" not in page.text_content("#turns-status"), "every turn read", 60)
    assert page.locator("#turns tbody tr").count() == 1

    # The conversation shows its first items at once, while the rest is still read.
    page.goto(f"{served.url}#view=conversation&c=1")
    page.wait_for_selector("#conversation .item.agent")
    assert "w0 w1 w2" in page.text_content("#conversation .item.agent .body")
    assert page.locator("#conversation .item").count() <= 1000
    wait_for(lambda: "reading" not in page.text_content("#conversation-status"),
             "every frame read", 60)  # fmt: skip
