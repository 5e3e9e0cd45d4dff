"""Recorded text never drives the terminal or the Markdown renderer (display.visible).

A recording whose peers put escape sequences (OSC 52 clipboard writes, OSC 0 window titles,
CSI 2J, C1 controls, bidi overrides) and markup (raw HTML, ``javascript:`` links) into every
field the readers show is shown by ``show``, ``tail``, ``ls``, ``stats`` and ``check`` on a
real pty, and exported as Markdown rendered by a CommonMark renderer (markdown-it-py).
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, ERR, line, write_recording
from tests.support.processes import acp_proxy, run_to_end
from tests.support.terminal import on_pty

OSC52 = "\x1b]52;c;cHduZWQ=\x07"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
C1_CSI = "\u009b31m"
BIDI = "\u202egnp.exe"
EVIL = f"{OSC52}{TITLE}{CLEAR}{C1_CSI}{BIDI}"
SESSION = f"sess{CLEAR}1"

HOSTILE = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientInfo": {"name": f"client{EVIL}", "version": "1"}}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": 1, "agentInfo": {"name": "agent", "title": f"agent{EVIL}"}}})),
    (ERR, f"stderr line {EVIL}\n".encode()),
    (A2C, f"not json {EVIL}\n".encode()),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}})),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": SESSION}})),
    (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": SESSION, "prompt": [
            {"type": "text", "text": f"prompt {EVIL} <script>alert(1)</script>"},
            {"type": "resource_link", "name": "click me", "uri": "javascript:alert(1)"},
        ]}})),
    (A2C, update(SESSION, {"sessionUpdate": "agent_message_chunk", "content": {
        "type": "text",
        "text": f"chunk {EVIL} <img src=x onerror=alert(1)> [link](javascript:alert(2)) "
                "<javascript:alert(3)>\n# not a heading\n- not a list",
    }})),
    (A2C, update(SESSION, {"sessionUpdate": "plan", "entries": [
        {"content": f"plan {EVIL}", "status": "pending", "priority": "high"}]})),
    (A2C, line({"jsonrpc": "2.0", "id": f"id{CLEAR}", "method": f"x/{TITLE}m", "params": {}})),
    (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": f"end{CLEAR}"}})),
    (C2A, line({"jsonrpc": "2.0", "id": 3, "method": "session/cancel", "params": {}})),
    (A2C, line({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": f"error {EVIL}"}})),
]  # fmt: skip

SGR = re.compile(rb"\x1b\[[0-9;]*m")  # our own styling
CONTROL = re.compile(
    rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
)


@pytest.fixture
def hostile(db_path: Path) -> Path:
    write_recording(db_path, HOSTILE, label=f"label{TITLE}")
    return db_path


def on_terminal(*args: str) -> bytes:
    """What a command writes to a terminal (stdout and stderr both on one pty)."""
    env = {"PAGER": "", "COLUMNS": "1000"}  # whole lines, no pager waiting
    done = on_pty(*args, env=env, stderr_too=True)
    assert done.returncode in (0, 1), done.output
    return done.output.replace(b"\r\n", b"\n")


def unsafe(output: bytes) -> list[bytes]:
    return CONTROL.findall(SGR.sub(b"", output))


@pytest.mark.parametrize(
    "command",
    [
        ["show"], ["show", "--pretty"], ["show", "--json"], ["tail", "-n", "50"], ["ls"],
        ["ls", "--json"], ["stats"], ["stats", "--json"], ["check", "--ignore", "ACP000"],
        ["export", "--format", "markdown"], ["export", "--format", "html"],
    ],
    ids=" ".join,
)  # fmt: skip
def test_recorded_escapes_never_reach_the_terminal(hostile: Path, command: list[str]) -> None:
    output = on_terminal(*command, "--db", str(hostile))
    assert output.strip()
    assert unsafe(output) == []
    if command[0] in ("show", "tail") and "--json" not in command:
        assert b"\\x1b]52;c;cHduZWQ=\\x07" in output  # shown, visibly
        assert b"\\u202e" in output


@pytest.fixture
def ended_hostile(hostile: Path) -> Path:
    """The hostile recording, finished (``delete`` and ``prune`` pass over a live one)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(hostile)) as db, db:
        db.execute(
            "UPDATE connection SET status = 'exited', exit_code = 0, ended_ns = started_ns + 1,"
            " label = ?", (LABEL,),
        )  # fmt: skip
    return hostile


LABEL = f"label{TITLE}{OSC52}{CLEAR}\u0085{BIDI}"


@pytest.mark.parametrize(
    "command",
    [
        ["delete", "last", "--dry-run"], ["prune", "--older-than", "0s", "--dry-run"],
        ["export", "--format", "jsonl"], ["redact", "last"], ["search", "chunk"],
        ["search", "-E", "chunk"], ["search", "chunk", "--json"],
    ],
    ids=" ".join,
)  # fmt: skip
def test_no_command_writes_recorded_controls_raw(ended_hostile: Path, command: list[str]) -> None:
    output = on_terminal(*command, "--db", str(ended_hostile))
    assert output.strip()
    assert unsafe(output) == []


def test_a_label_from_an_imported_export_stays_visible(ended_hostile: Path, tmp_path: Path) -> None:
    exported = tmp_path / "hostile.jsonl"
    done = acp_proxy(
        "export", "--format", "jsonl", "-o", str(exported), "--db", str(ended_hostile),
        text=False, timeout=30, check=True,
    )  # fmt: skip
    assert not done.stderr.strip()
    imported = tmp_path / "imported.sqlite"
    acp_proxy("import", str(exported), "--db", str(imported), text=False, timeout=30, check=True)
    output = on_terminal("delete", "last", "--dry-run", "--db", str(imported))
    assert b"would delete" in output
    assert unsafe(output) == []
    assert b"\\x1b]52;c;cHduZWQ=\\x07" in output  # shown, visibly


def test_jsonl_escapes_keep_every_stored_byte(ended_hostile: Path, tmp_path: Path) -> None:
    """The export escapes controls the JSON way: imported back, every frame's bytes are equal."""
    import sqlite3

    exported = tmp_path / "hostile.jsonl"
    acp_proxy(
        "export", "--format", "jsonl", "-o", str(exported), "--db", str(ended_hostile),
        text=False, timeout=30, check=True,
    )  # fmt: skip
    assert unsafe(exported.read_bytes()) == []
    imported = tmp_path / "imported.sqlite"
    acp_proxy("import", str(exported), "--db", str(imported), text=False, timeout=30, check=True)

    def stored(path: Path) -> tuple[list[tuple[bytes, ...]], str]:
        with contextlib.closing(sqlite3.connect(path)) as db:
            frames = db.execute("SELECT raw FROM frame ORDER BY seq").fetchall()
            return frames, db.execute("SELECT label FROM connection").fetchone()[0]

    assert stored(imported) == stored(ended_hostile)
    assert any(b"\xe2\x80\xae" in raw for (raw,) in stored(imported)[0])  # bidi kept, exact


def test_a_shared_label_and_json_stay_exact(hostile: Path) -> None:
    """--json keeps every value (the escapes are JSON's own, read back as the characters)."""
    import json

    output = on_terminal("show", "--json", "--db", str(hostile))
    records = [json.loads(x) for x in output.decode().splitlines()]
    assert records[2]["text"] == f"stderr line {EVIL}\n"
    assert records[0]["message"]["params"]["clientInfo"]["name"] == f"client{EVIL}"


def test_the_proxy_stderr_lines_make_quoted_text_visible() -> None:
    code = "from acp_proxy.stderr import report; report('method ' + chr(27) + ']0;x' + chr(7))"
    done = run_to_end([sys.executable, "-c", code], text=False, timeout=30, check=True)
    assert done.stderr == b"acp-proxy: method \\x1b]0;x\\x07\n"


def test_the_demo_summary_makes_recorded_text_visible(hostile: Path) -> None:
    from acp_proxy.inspect.summary import render_summary
    from acp_proxy.store.database import connect
    from acp_proxy.store.summary import summarize

    summary = render_summary(summarize(connect(hostile), 1), hostile)
    assert not CONTROL.findall(summary.encode())
    assert "\\x1b]0;pwned\\x07" in summary


def test_markdown_renders_recorded_text_as_text(hostile: Path) -> None:
    output = run_to_end(
        [sys.executable, "-m", "acp_proxy", "export", "--format", "markdown", "--db", str(hostile)],
        timeout=30,
        check=True,
    ).stdout
    page = MarkdownIt("commonmark").render(output)
    assert "<script" not in page
    assert "<img" not in page
    assert "javascript:" not in re.sub(r"<code>.*?</code>", "", page).replace(
        "&lt;javascript:alert(3)&gt;", ""
    ).replace("[link](javascript:alert(2))", "").replace("alert(1)", "")
    assert 'href="javascript' not in page
    assert "<h1>not a heading" not in page.replace("<h1>ACP", "")
    # What was sent is what a reader sees, as text.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "[link](javascript:alert(2))" in page
    assert "# not a heading" in page
    assert "- not a list" in page
    assert "click me (<code>javascript:alert(1)</code>)" in page


@given(st.text())
def test_visible_leaves_nothing_a_terminal_acts_on(value: str) -> None:
    from acp_proxy.display import is_visible, visible

    shown = visible(value)
    assert is_visible(shown)
    assert not CONTROL.findall(shown.encode("utf-8", "surrogatepass"))
    if value.isprintable():
        assert shown is value
    kept = visible(value, lines=True)
    assert kept.count("\n") == value.count("\n")


@given(st.text())
def test_json_visible_keeps_the_value(value: str) -> None:
    import json

    import orjson

    from acp_proxy.display import json_visible

    document = json_visible(orjson.dumps({"v": value}).decode())
    assert json.loads(document) == {"v": value}
    assert not CONTROL.findall(document.encode())


@given(st.text())
def test_json_line_keeps_the_value(value: str) -> None:
    import json

    import orjson

    from acp_proxy.display import json_line

    document = json_line(orjson.dumps({"v": value}))
    assert json.loads(document) == {"v": value}
    assert not CONTROL.findall(document)


@given(st.text(st.characters(blacklist_categories=["Cs", "Cc"])))
def test_markdown_text_renders_as_the_text(value: str) -> None:
    import html

    from acp_proxy.inspect.render.markdown import text as markdown_text

    value = value.strip()
    page = MarkdownIt("commonmark").render(markdown_text(value))
    shown = html.unescape(re.sub(r"</?p>|\n", "", page)).strip()
    assert "<" not in re.sub(r"&lt;", "", page.replace("<p>", "").replace("</p>", ""))
    assert " ".join(shown.split()) == " ".join(value.split())
