"""Latency and errors as the page shows them, in a real browser: the timeline's latency cells
coloured by speed (under 100 ms, under 1 s, slower), the performance view's waterfall with an
idle stretch compressed into a hatched break that says how long it was, and the sequence
diagram's error arrows in red, paged, with "more" only while there is more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import Frame
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.helpers import A2C, C2A, line, write_recording
from tests.support.ui_server import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

MS = 1_000_000
RED = "#d33"  # views/sequence.js: ERROR
# (ms from the start, direction, message): a fast call, two idle seconds, a slow one, a slower.
TIMED = [
    (0, C2A, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    (20, A2C, {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}),
    (2000, C2A, {"jsonrpc": "2.0", "id": 2, "method": "session/new",
                 "params": {"cwd": "/", "mcpServers": []}}),
    (2500, A2C, {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}}),
    (2600, C2A, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                 "params": {"sessionId": "s", "prompt": []}}),
    (4100, A2C, {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}),
]  # fmt: skip


def write_timed(path: Path) -> None:
    db = connect(path)
    writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "test", 1, label="timed"))
    observer = ConnectionObserver()
    offsets = dict.fromkeys(Direction, 0)
    records = []
    for at_ms, direction, message in TIMED:
        raw = json.dumps(message).encode() + b"\n"
        clock = 10**9 + at_ms * MS
        records.append(observer.observe(direction, Frame(raw, offsets[direction]), clock, clock))
        offsets[direction] += len(raw)
    writer.append(records, facts=observer.facts())
    writer.done()
    db.close()


def test_latencies_are_coloured_and_idle_time_compressed(
    db_path: Path, serve_ui: Any, page: Any
) -> None:
    write_timed(db_path)
    served = serve_ui("--db", str(db_path))
    page.goto(f"{served.url}#view=timeline&c=1")
    page.wait_for_selector("#spacer .row")
    cells = page.eval_on_selector_all(
        "#spacer .row",
        "rows => rows.map(r => [r.querySelector('.method').textContent,"
        " r.querySelector('.lat').className, r.querySelector('.lat').textContent])",
    )
    requests = {method: (cls, text) for method, cls, text in cells[::2]}
    assert requests["initialize"] == ("cell lat fast", "20.0 ms")
    assert requests["session/new"] == ("cell lat slow", "500 ms")
    assert requests["session/prompt"][0] == "cell lat slower"
    assert requests["session/prompt"][1] == "1.50 s"

    page.goto(f"{served.url}#view=performance&c=1")
    page.wait_for_selector("#waterfall g.call", state="attached")
    calls = page.eval_on_selector_all("#waterfall g.call", "gs => gs.map(g => g.className.baseVal)")
    assert calls == ["call fast", "call slow", "call slower"]
    # The two idle seconds are one break of a few pixels, not two thirds of the picture.
    breaks = page.eval_on_selector_all(
        "#waterfall rect.break",
        "rs => rs.map(r => [r.getAttribute('width'), r.querySelector('title').textContent])",
    )
    assert len(breaks) == 1
    width, title = breaks[0]
    assert float(width) < 20
    assert title.startswith("idle 1.9")
    bars = page.eval_on_selector_all(
        "#waterfall g.call rect", "rs => rs.map(r => Number(r.getAttribute('width')))"
    )
    assert bars[2] > bars[1] > bars[0]  # busy time keeps its proportions
    assert "Slowest call: session/prompt" in page.text_content("#insights")


def calls(count: int, failing: int) -> Iterator[tuple[Direction, bytes]]:
    """``count`` requests, each answered; the ``failing``-th with an error."""
    for n in range(count):
        yield C2A, line({"jsonrpc": "2.0", "id": n, "method": "fs/read_text_file",
                         "params": {"sessionId": "s", "path": f"/f{n}"}})  # fmt: skip
        if n == failing:
            yield A2C, line({"jsonrpc": "2.0", "id": n,
                             "error": {"code": -32603, "message": "no such file"}})  # fmt: skip
        else:
            yield A2C, line({"jsonrpc": "2.0", "id": n, "result": {"content": "x"}})


def test_sequence_errors_are_red_and_more_only_while_there_is_more(
    db_path: Path, serve_ui: Any, page: Any
) -> None:
    write_recording(db_path, calls(450, failing=3), label="calls")  # 900 arrows: three pages
    served = serve_ui("--db", str(db_path))
    page.goto(f"{served.url}#view=sequence&c=1")
    page.wait_for_selector("g.msg")
    error = page.locator("g.msg.error")
    assert error.count() == 1
    assert error.get_attribute("data-seq") == "8"
    assert error.locator("line.arrow").get_attribute("stroke") == RED
    assert page.locator("button.more").is_visible()
    for _ in range(5):
        if page.locator("button.more").is_hidden():
            break
        shown: int = page.locator("g.msg").count()
        # The button's own click, without scrolling it into view first as page.click does:
        # a scroll near the end loads the next arrows too, and the two would race.
        page.locator("button.more").dispatch_event("click")

        def grown(before: int = shown) -> bool:
            return bool(page.locator("g.msg").count() > before)

        wait_for(grown, "the next arrows")
    # The end: every arrow once, and no button that would do nothing.
    wait_for(lambda: page.locator("button.more").is_hidden(), "more hidden at the end")
    assert page.locator("g.msg").count() == 900
