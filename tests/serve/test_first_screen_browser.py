"""The page's first requests, in a real browser: each view's first answers are asked for by
the page's inline start-up script before its modules arrive, and each is taken by the view
that needs it (none asked twice, but for a question polled while its answer grows; none
left over); a link to a frame far into a recording opens the timeline that starts shortly
before it, in one step.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from acp_proxy.protocol.acp import Direction
from tests.support.helpers import A2C, C2A, line, write_recording

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FRAMES = 30_000  # a frame beyond 10,000 is "far": the page opens the timeline near it
# What the page asked the server for, once each entry (resource timing sees every fetch).
ASKED = """() => performance.getEntriesByType('resource').map(e => e.name)
    .filter(n => n.includes('/api/') && !n.includes('/api/events')).map(n => n.split('/api/')[1])"""


def turns(frames: int) -> Iterator[tuple[Direction, bytes]]:
    """Prompt turns of a request, five message chunks and the response."""
    n = 0
    while frames > 0:
        yield C2A, line({"jsonrpc": "2.0", "id": n, "method": "session/prompt", "params": {
            "sessionId": "s", "prompt": [{"type": "text", "text": f"q{n}"}]}})  # fmt: skip
        for i in range(5):
            yield A2C, line({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                "messageId": f"m{n}", "content": {"type": "text", "text": f"w{i} "}}}})  # fmt: skip
        yield A2C, line({"jsonrpc": "2.0", "id": n, "result": {"stopReason": "end_turn"}})
        frames -= 7
        n += 1


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("first-screen") / "r.sqlite"
    write_recording(path, turns(FRAMES), label="turns")
    return path


@pytest.fixture
def served(recording: Path, serve_ui: Any) -> Any:
    return serve_ui("--db", str(recording))


# Questions a view asks again while their answer still grows (the same question, a new
# answer): the findings of the frames shown until the check has finished, the performance of
# a recording whose turns are still being read. On a busy machine either can take a second.
POLLED = ("/findings", "/performance")


def settled(page: Any) -> None:
    """Until every early answer is taken or the page has run a while (then the test fails)."""
    page.wait_for_function("() => window.acpEarly && window.acpEarly.size === 0", timeout=20_000)


@pytest.mark.parametrize(
    ("hash", "ready"),
    [
        ("#view=timeline&c=1", "#spacer .row"),
        ("#view=timeline&c=1&kind=request&f=71", "#detail h2"),
        ("#view=sequence&c=1", "g.msg"),
        ("#view=conversation&c=1", "#conversation .item"),
        ("#view=performance&c=1", "#waterfall"),
        ("#view=recordings", "#recordings tbody tr"),
        ("", "#recordings tbody tr"),
    ],
)
def test_every_early_answer_is_taken_once(served: Any, page: Any, hash: str, ready: str) -> None:
    page.goto(served.url + hash)
    page.wait_for_selector(ready, state="attached")
    settled(page)
    asked = Counter(page.evaluate(ASKED))
    assert asked["info"] == 1
    twice = [u for u, count in asked.items() if count > 1 and not urlsplit(u).path.endswith(POLLED)]
    assert not twice, asked


def test_a_far_frame_opens_near_it_in_one_step(served: Any, page: Any) -> None:
    far = 20_001
    page.goto(f"{served.url}#view=timeline&c=1&f={far}")
    page.wait_for_selector(f'#detail[aria-label="frame {far}"] h2')
    page.wait_for_function(
        """seq => [...document.querySelectorAll('#spacer .row')].some(
            r => Number(r.dataset.seq) <= seq && seq <= Number(r.dataset.last || r.dataset.seq))""",
        arg=far,
    )
    settled(page)
    assert page.evaluate("location.hash").endswith(f"f={far}&from={far - 100}")
    asked = page.evaluate(ASKED)
    # Straight to the timeline that starts there: nothing asked of the whole timeline's index.
    assert not [url for url in asked if "/rows" in url and "from=" not in url], asked
    assert not [url for url in asked if "/locate" in url and "from=" not in url], asked
    assert page.text_content("#count").count("from frame 19,901") == 1


# Every request the page makes, with when (page time), and the moment the frame named by the
# URL is on screen: its row selected, its detail open, and what the count said then.
WATCH_REQUESTS = """(() => {
  window.acpAsked = [];
  const ask = (url) => window.acpAsked.push([performance.now(), String(url)]);
  const fetched = window.fetch;
  window.fetch = function (url, options) { ask(url); return fetched.call(this, url, options); };
  const Stream = window.EventSource;
  window.EventSource = function (url, options) { ask(url); return new Stream(url, options); };
  const seq = Number(new URLSearchParams(location.hash.slice(1)).get("f"));
  new MutationObserver(() => {
    if (window.acpShown) return;
    const row = [...document.querySelectorAll('#spacer .row[aria-selected="true"]')].find(
      (r) => Number(r.dataset.seq) <= seq && seq <= Number(r.dataset.last || r.dataset.seq));
    const title = document.querySelector("#detail h2");
    if (row && title && title.textContent.startsWith(`Frame ${seq} `)) {
      const count = document.querySelector("#count").textContent;
      window.acpShown = { at: performance.now(), count };
    }
  }).observe(document, { subtree: true, childList: true, attributes: true });
})()"""
BACKGROUND = ("scan=1", "/findings", "api/events")
# The index's growth and the findings wait a moment after the frame is shown (the page's
# GROW_AFTER_MS and FINDINGS_AFTER_MS, 500 ms): the browser paints the first screen first.
LATER = ("scan=1", "/findings")
LATER_MS = 400


@pytest.mark.parametrize("seq", [71, 15_001])
def test_the_frame_named_by_the_url_comes_before_the_background_work(
    served: Any, page: Any, seq: int
) -> None:
    """A frame among the first rows, and one far into the recording: its row is drawn
    selected and its detail open before the page asks for anything of the background (the
    index's growth, the findings, the live stream), the index's growth and the findings come
    a moment after that, and the page says the index is not complete yet."""
    page.add_init_script(WATCH_REQUESTS)
    page.goto(f"{served.url}#view=timeline&c=1&f={seq}")
    page.wait_for_function("() => window.acpShown", timeout=20_000)
    # The background work starts once the frame is shown: every part of it is asked for.
    page.wait_for_function(
        f"() => {list(BACKGROUND)}.every(b => window.acpAsked.some(([, url]) => url.includes(b)))",
        timeout=20_000,
    )
    shown = page.evaluate("window.acpShown")
    asked = page.evaluate("window.acpAsked")
    early = [url for at, url in asked if at < shown["at"] and any(b in url for b in BACKGROUND)]
    assert not early, (shown, asked)
    soon = [
        url for at, url in asked if at < shown["at"] + LATER_MS and any(b in url for b in LATER)
    ]
    assert not soon, (shown, asked)
    assert "indexing…" in shown["count"], shown
    assert page.get_attribute(f'#spacer .row[data-seq="{seq}"]', "aria-selected") == "true"


def test_findings_not_checked_yet_are_said_so(served: Any, page: Any) -> None:
    """A frame shown before the rule check has reached it says so, in its detail and beside
    the row count; once the check has reached it, its findings are shown."""
    page.goto(f"{served.url}#view=timeline&c=1&f=71")
    page.wait_for_selector('#detail[aria-label="frame 71"] h2')
    assert page.text_content("#detail #unchecked") == "The rule check has not started yet."
    page.wait_for_function("() => document.querySelector('#count #checking')?.textContent")
    # No initialize in this recording: every prompt is a finding (ACP008), shown once checked.
    page.wait_for_selector("#detail .finding", timeout=60_000)
    assert "ACP008" in page.text_content("#detail .finding")
    page.wait_for_function("() => !document.querySelector('#count #checking')?.textContent")
    # Checked to its end; the recording's status is still "running" (a live connection's
    # check goes on with its frames): the detail says the check is still running, no more.
    page.wait_for_function(
        "() => (document.querySelector('#detail #unchecked')?.textContent || '')"
        ".includes('still running')"
    )


@pytest.fixture(scope="module")
def ended(recording: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same recording, its connection ended: once checked, its findings are final."""
    path = tmp_path_factory.mktemp("ended") / "r.sqlite"
    shutil.copy(recording, path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE connection SET status = 'exited', exit_code = 0")
    db.close()
    return path


def test_the_page_asks_for_the_findings_of_the_frames_it_shows(
    ended: Path, serve_ui: Any, page: Any
) -> None:
    """The findings come by range of frames, those on screen (a long recording's findings stay
    on the server): marks near the start; once the check has finished, marks in a new view of
    the same connection (a filter) and far into the recording after a jump."""
    served = serve_ui("--db", str(ended))
    page.add_init_script(WATCH_REQUESTS)
    page.goto(f"{served.url}#view=timeline&c=1&f=71")
    page.wait_for_selector("#spacer .row.has-finding", timeout=20_000)
    page.wait_for_function(
        "() => document.querySelector('#checking')?.textContent === ''", timeout=30_000
    )
    page.wait_for_timeout(1_500)  # past the last poll of a finished check
    marked_beyond = """seq => [...document.querySelectorAll('#spacer .row.has-finding')]
        .some(r => Number(r.dataset.seq) > seq)"""
    page.evaluate("location.hash = '#view=timeline&c=1&kind=request'")  # a view of its own
    page.wait_for_function(marked_beyond, arg=200, timeout=20_000)
    page.evaluate("location.hash = '#view=timeline&c=1&kind=request&f=15002'")
    page.wait_for_function(marked_beyond, arg=14_000, timeout=20_000)
    asked = [url for _, url in page.evaluate("window.acpAsked") if "/findings" in url]
    assert asked
    for url in asked:
        query = parse_qs(urlsplit(url).query)
        assert "since" not in query, url
        first, last = int(query["first"][0]), int(query["last"][0])
        assert 0 < last - first < 1_000, url  # a screen's frames, not the recording's


def test_a_new_tab_takes_the_pages_files_from_the_browsers_cache(served: Any, page: Any) -> None:
    """The script and the stylesheet are named with their version: a second tab of the same
    browser opens without fetching them again (nothing transferred), only the answers."""
    page.goto(f"{served.url}#view=timeline&c=1")
    page.wait_for_selector("#spacer .row")
    tab = page.context.new_page()
    tab.goto(f"{served.url}#view=timeline&c=1&f=71")
    tab.wait_for_selector('#detail[aria-label="frame 71"] h2')
    files = tab.evaluate("""() => performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/static/'))
        .map(e => [e.name.split('/static/')[1], e.transferSize, e.decodedBodySize])""")
    assert sorted(name.split("?")[0] for name, _, _ in files) == ["app.css", "page.js"], files
    assert all(transferred == 0 and size > 0 for _, transferred, size in files), files
