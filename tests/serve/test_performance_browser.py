"""Latency as the page shows it, in a real browser: the timeline's latency cells coloured by
speed (under 100 ms, under 1 s, slower), and the performance view's waterfall with an idle
stretch compressed into a hatched break that says how long it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import Frame
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.helpers import A2C, C2A

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

MS = 1_000_000
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
