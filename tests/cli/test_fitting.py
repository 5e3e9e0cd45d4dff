"""On an 80-column terminal, paged or not, ``show`` and ``ls`` cut every line to fit it.

A real pty whose window size says 80 columns (no ``COLUMNS`` in the environment, as in a
terminal), with ``cat`` as the pager: the pager's output lands on the same terminal, the
way ``less`` shows it. Also: an agent that names itself nowhere but in its command line is
named by its script, not by its interpreter.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

import pytest

from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, line, observe_all
from tests.support.processes import run_to_end
from tests.support.terminal import on_pty

COLUMNS = 80
WIDE_TEXT = "日本語のテキストは一文字が二列を占める" * 4  # each character takes two columns
SGR = re.compile(r"\x1b\[[0-9;]*m")
FRAME_LINE = re.compile(r" *\d+ +[+-]\d+\.\d{3}s ")
INTERPRETED = [sys.executable, "-u", "/home/someone/projects/acp/examples/echo_agent.py", "--x"]


@pytest.fixture
def wide(db_path: Path) -> Path:
    long_text = "a long agent message that goes on " * 8
    exchange = [
        (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": 1, "clientInfo": {"name": "zed"}}})),
        (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})),
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                    "params": {"cwd": "/home/someone/a/rather/deep/folder/of/projects"}})),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s" * 60}})),
        (A2C, update("s" * 60, {"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": long_text}})),
        (A2C, update("s" * 60, {"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": WIDE_TEXT}})),
    ]  # fmt: skip
    observer, records = observe_all(exchange)
    db = connect(db_path)
    started = NewConnection(INTERPRETED, "/", "test", 1, label="a-label-long-enough-to-matter")
    writer = RecordingWriter.start(db, started)
    writer.append(records, facts=observer.facts())
    db.close()
    return db_path


def columns(text: str) -> int:
    """What a terminal gives ``text``: two columns for a wide character, none for a mark."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF"
               else 1 for c in text)  # fmt: skip


def on_terminal(*args: str, pager: str) -> list[str]:
    """The lines a command shows on an 80-column pty, through ``pager`` (empty: none)."""
    env = {"COLUMNS": None, "LINES": None, "PAGER": pager, "NO_COLOR": ""}
    done = on_pty(*args, env=env, columns=COLUMNS)
    assert done.returncode == 0, done.output
    return SGR.sub("", done.output.decode()).replace("\r\n", "\n").splitlines()


@pytest.mark.parametrize("pager", ["cat", ""], ids=["paged", "not paged"])
@pytest.mark.parametrize("command", [["show"], ["show", "--pretty"], ["ls"]], ids=" ".join)
def test_every_line_fits_80_columns(wide: Path, command: list[str], pager: str) -> None:
    lines = on_terminal(*command, "--db", str(wide), pager=pager)
    assert lines
    if "--pretty" in command:  # its JSON bodies are the frames in full: only frame lines are cut
        lines = [text for text in lines if FRAME_LINE.match(text)]
    too_long = [text for text in lines if columns(text) > COLUMNS]
    assert too_long == []
    assert any(text.endswith("…") for text in lines)  # something was long enough to be cut


def test_into_a_pipe_lines_keep_their_full_form(wide: Path) -> None:
    done = run_to_end(
        [sys.executable, "-m", "acp_proxy", "ls", "--db", str(wide)], timeout=30, check=True
    )
    assert max(len(text) for text in done.stdout.splitlines()) > COLUMNS


def test_an_interpreted_agent_is_named_by_its_script(wide: Path) -> None:
    done = run_to_end(
        [sys.executable, "-m", "acp_proxy", "ls", "--db", str(wide)], timeout=30, check=True
    )
    first = done.stdout.splitlines()[0]
    assert "  echo_agent.py --x <- zed  " in first
    assert "python" not in first
