"""A live conversation through the proxy, watched in a real browser while it happens.

The official Python SDK's example client (``examples/client.py`` of agent-client-protocol
0.12.1) talks to the demo agent (acp_proxy/demo, written on the same SDK) through
``acp-proxy record``; the client sends one prompt per line of its stdin, so the test decides
when the conversation moves. The page is open on the connection's timeline before the prompt
is sent, and every frame recorded after that must show in the page within a second of its
capture time (which is before its commit, so the bound holds for the commit too).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.store.database import connect
from tests.support.ui_server import Served, env, screenshot, wait_for

pytestmark = [pytest.mark.peers, pytest.mark.slow, pytest.mark.timeout(120)]

PROMPT = "hello there"
REPLY = "Name a file with @path or attach one"


def frames(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM frame ORDER BY id")]
    finally:
        con.close()


def expected_rows(recorded: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(first seq, frames) per timeline row, by a plain reading of the rule (docs/ui.md)."""
    rows: list[tuple[int, int]] = []
    last = None
    for f in recorded:
        kind = f["update_kind"] or ""
        key = (f["direction"], f["session_id"], kind, f["message_id"])
        if kind.endswith("_chunk") and key == last:
            rows[-1] = (rows[-1][0], rows[-1][1] + 1)
        else:
            rows.append((f["seq"], 1))
        last = key if kind.endswith("_chunk") else None
    return rows


def prompt_answers(db: Path) -> list[dict[str, Any]]:
    return [f for f in frames(db) if f["method"] == "session/prompt" and f["kind"] != "request"]


def shown_rows(page: Any) -> list[dict[str, Any]]:
    return page.eval_on_selector_all(
        "#spacer .row",
        """rows => rows.map(r => ({seq: Number(r.dataset.seq), count: Number(r.dataset.count || 1),
            dir: r.querySelector('.cell.dir').textContent, sub: r.classList.contains('sub'),
            text: r.textContent}))""",
    )


@pytest.fixture
def conversation(tmp_path: Path, python_examples: Path) -> Any:
    db = tmp_path / "live.sqlite"
    connect(db).close()
    agent = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--label", "live",
             "--", sys.executable, "-m", "acp_proxy.demo.agent"]  # fmt: skip
    out = (tmp_path / "client.out").open("wb")
    err = (tmp_path / "client.err").open("wb")
    client = subprocess.Popen(
        [sys.executable, str(python_examples / "client.py"), *agent],
        stdin=subprocess.PIPE, stdout=out, stderr=err, env=env(), cwd=tmp_path,
    )  # fmt: skip
    yield db, client
    if client.poll() is None:
        assert client.stdin is not None
        client.stdin.close()
        try:
            client.wait(timeout=20)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()
    out.close()
    err.close()


def test_a_live_conversation_streams_into_the_page(
    conversation: Any, serve_ui: Any, page: Any
) -> None:
    db, client = conversation
    served: Served = serve_ui("--db", str(db))
    page.goto(served.url)
    # The list shows the new connection without a reload, live.
    page.wait_for_selector("#recordings tbody tr td .badge.live", timeout=20_000)
    screenshot(page, "recordings")
    page.click("#recordings tbody tr")
    page.wait_for_selector("#spacer .row")
    handshake = wait_for(
        lambda: len([f for f in frames(db) if f["method"] == "session/new"]) == 2 and frames(db),
        "initialize and session/new",
    )
    wait_for(lambda: len(shown_rows(page)) >= len([f for f in handshake if f["seq"]]) - 1,
             "the handshake in the page")  # fmt: skip
    opened_ms = page.evaluate("Date.now()")

    assert client.stdin is not None
    client.stdin.write(f"{PROMPT}\n".encode())
    client.stdin.flush()
    answered = wait_for(lambda: prompt_answers(db), "the prompt's response", 30)
    recorded = frames(db)
    fresh = [f for f in recorded if f["wall_ns"] / 1e6 > opened_ms]
    assert len(fresh) >= 6, fresh
    wait_for(
        lambda: all(str(f["seq"]) in page.evaluate("window.acpSeen") for f in fresh),
        "every new frame in the page",
        5,
    )
    seen = page.evaluate("window.acpSeen")
    delays = {f["seq"]: seen[str(f["seq"])] - f["wall_ns"] / 1e6 for f in fresh}
    assert max(delays.values()) < 1000, delays

    # One row per frame, but a run of the agent's message chunks: one row, with its count
    # (an agent stderr line between two chunks would end a run: rows follow what was recorded).
    chunks = [f for f in recorded if f["update_kind"] == "agent_message_chunk"]
    assert len(chunks) > 1
    # (Frames may still come after the answer: the page is compared with what is recorded then.)
    wait_for(
        lambda: [(r["seq"], r["count"]) for r in shown_rows(page)] == expected_rows(frames(db)),
        "the page's rows to be the recording's",
        5,
        lambda: ([(r["seq"], r["count"]) for r in shown_rows(page)], expected_rows(frames(db))),
    )
    recorded = frames(db)
    rows = shown_rows(page)
    run = next(r for r in rows if r["count"] > 1)
    members = [f for f in recorded if run["seq"] <= f["seq"] < run["seq"] + run["count"]]
    assert {f["update_kind"] for f in members} == {"agent_message_chunk"}
    assert REPLY[:20] in run["text"]
    screenshot(page, "timeline")

    page.click(f'#spacer .row[data-seq="{run["seq"]}"] .toggle')
    wait_for(lambda: len([r for r in shown_rows(page) if r["sub"]]) == run["count"], "expanded")
    subs = [r["seq"] for r in shown_rows(page) if r["sub"]]
    assert subs == [f["seq"] for f in members]
    page.click(f'#spacer .row[data-seq="{run["seq"]}"] .toggle')
    wait_for(lambda: not [r for r in shown_rows(page) if r["sub"]], "collapsed again")

    # A click shows the frame's JSON and its pair with the latency.
    prompt = next(f for f in recorded if f["method"] == "session/prompt" and f["kind"] == "request")
    page.click(f'#spacer .row[data-seq="{prompt["seq"]}"]')
    page.wait_for_selector("#detail #pair .link")
    assert page.text_content("#detail #pair .link") == f"frame {answered[0]['seq']}"
    assert "latency" in page.text_content("#detail #pair")
    tree = page.text_content("#detail .tree")
    assert '"session/prompt"' in tree
    assert f'"{PROMPT}"' in tree
    assert "The blocks of content" in page.text_content("#detail .fields")  # schema text
    assert f"f={prompt['seq']}" in page.url
    screenshot(page, "frame")

    # A filter hides what it should, and the URL keeps it.
    page.select_option('#filters select[name="direction"]', "c2a")
    wait_for(lambda: {r["dir"] for r in shown_rows(page)} == {"c→a"}, "only client frames")
    assert len(shown_rows(page)) == len([f for f in recorded if f["direction"] == "c2a"])
    page.fill('#filters input[name="text"]', PROMPT.upper())
    wait_for(lambda: [r["seq"] for r in shown_rows(page)] == [prompt["seq"]], "the text filter")
    assert "direction=c2a" in page.url
    assert "text=HELLO" in page.url
    linked = page.url
    page.goto("about:blank")
    page.goto(linked)
    wait_for(lambda: [r["seq"] for r in shown_rows(page)] == [prompt["seq"]], "the same view")
    assert page.input_value('#filters input[name="text"]') == PROMPT.upper()

    # The sequence diagram: one arrow per message, a run of chunks folded into one arrow.
    cid = recorded[0]["connection_id"]
    page.goto(f"{served.url}#view=sequence&c={cid}")
    protocol = [f for f in frames(db) if f["direction"] != "stderr"]
    folded = expected_rows(protocol)
    assert len(folded) < len(protocol)
    wait_for(lambda: page.locator("g.msg").count() == len(folded), "one arrow per message")
    arrows = page.eval_on_selector_all(
        "g.msg", "gs => gs.map(g => [Number(g.dataset.seq), Number(g.dataset.count)])"
    )
    assert [tuple(a) for a in arrows] == folded
    screenshot(page, "sequence")

    # The conversation view shows the agent's text.
    page.goto(f"{served.url}#view=conversation&c={cid}")
    page.wait_for_selector("#conversation .item.agent")
    assert REPLY in page.text_content("#conversation .item.agent .body")
    assert PROMPT in page.text_content("#conversation .item.user .body")
    screenshot(page, "conversation")

    page.goto(f"{served.url}#view=performance&c={cid}")
    page.wait_for_selector("#methods tbody tr")
    methods = page.eval_on_selector_all(
        "#methods tbody tr td:first-child", "c => c.map(x => x.textContent)"
    )
    assert {"initialize", "session/new", "session/prompt"} <= set(methods)
    assert page.locator("#turns tbody tr").count() == 1
    page.wait_for_selector("#insights li")
    assert "Live: figures cover" in page.text_content("#insights")
    screenshot(page, "performance")

    client.stdin.close()
    assert client.wait(timeout=30) == 0
    # The list follows the end of the recording without a reload.
    wait_for(lambda: page.locator("#live").is_hidden(), "the live badge to go", 10)
    page.click("#tabs a[data-view=recordings]")
    page.wait_for_selector("#recordings tbody tr")
    ending = wait_for(lambda: connection_ending(db), "the recorded ending")
    wait_for(lambda: ending in (page.text_content("#recordings tbody tr") or ""), "the ending", 10)
    assert page.locator("#recordings .badge.live").count() == 0


def connection_ending(db: Path) -> str | None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        status, code, signal = con.execute(
            "SELECT status, exit_code, exit_signal FROM connection"
        ).fetchone()
    finally:
        con.close()
    if status == "running":
        return None
    return f"signal {signal}" if signal is not None else f"exit {code}"
