"""A peer that sends no agentInfo/clientInfo is named by its command; a failed start says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from acp_proxy.inspect.render import words
from acp_proxy.inspect.summary import render_summary
from acp_proxy.store.database import connect
from acp_proxy.store.summary import summarize
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.helpers import C2A, line, observe_all

AGENT_ARGV = ["/opt/tools/bin/my-agent", "--acp", "--model", "a-very-long-model-name-indeed"]


def test_command_is_program_name_and_arguments_cut() -> None:
    assert words.command(["/usr/bin/gemini", "--experimental-acp"]) == "gemini --experimental-acp"
    shortened = words.command(AGENT_ARGV)
    assert shortened.startswith("my-agent --acp --model ")
    assert shortened.endswith("…")
    assert len(shortened) == words.COMMAND_WIDTH
    assert words.command(["agent", "a\nb", ""]) == "agent a b ''"
    assert words.command([]) == ""


def test_peer_prefers_info_then_command_then_unnamed() -> None:
    assert words.peer({"name": "zed", "version": "1.0"}, AGENT_ARGV) == "zed 1.0"
    assert words.peer(None, ["goose", "acp"]) == "goose acp"
    assert words.peer({"version": "3"}, ["goose", "acp"]) == "goose acp"
    assert words.peer(None) == "unnamed"


def _recording(db_path: Path) -> None:
    db = connect(db_path)
    hello = line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    observer, records = observe_all([(C2A, hello)])
    writer = RecordingWriter.start(db, NewConnection(AGENT_ARGV, "/", "test", 1, label="nameless"))
    writer.append(records, facts=observer.facts())
    failed = RecordingWriter.start(db, NewConnection(["no-such-agent"], "/", "test", 1))
    failed.update(status="spawn_failed", error="cannot run 'no-such-agent': command not found")
    db.close()


def test_ls_show_and_summary_name_the_agent_by_its_command(db_path: Path) -> None:
    _recording(db_path)
    result = CliRunner().invoke(cli, ["ls", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    first, second, _size = result.output.splitlines()
    assert "my-agent --acp --model" in first
    assert "unnamed <- unnamed" not in first
    assert "did not start (cannot run 'no-such-agent': command not found)" in second
    db = connect(db_path, create=False)
    summary = render_summary(summarize(db, 2), db_path)
    assert "agent:   no-such-agent" in summary
    assert "did not start (cannot run 'no-such-agent': command not found)" in summary
    markdown = CliRunner().invoke(cli, ["export", "nameless", "--db", str(db_path)])
    assert "- Agent: my-agent --acp" in markdown.output, markdown.output


def test_summary_says_how_to_get_datasette_when_missing(db_path: Path) -> None:
    _recording(db_path)
    db = connect(db_path, create=False)
    summary = summarize(db, 1)
    assert "pip install 'acp-proxy[demo]'" in render_summary(
        summary, db_path, datasette_installed=False
    )
    assert "pip install" not in render_summary(summary, db_path)


CLIENT_WITHOUT_INFO = """
import subprocess, sys
proxy = subprocess.Popen(
    [sys.executable, "-m", "acp_proxy", "record", "--db", sys.argv[1], "--label", "quiet",
     "--", sys.executable, "-c", "import sys; sys.stdin.read()"],
    stdin=subprocess.PIPE,
)
proxy.communicate(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\\n')
sys.exit(proxy.returncode)
"""


def test_a_client_without_client_info_is_named_by_its_command(tmp_path: Path) -> None:
    """The proxy records its parent's command line: the client that launched it."""
    import subprocess
    import sys

    db_path = tmp_path / "rec.sqlite"
    client = tmp_path / "quiet_client.py"
    client.write_text(CLIENT_WITHOUT_INFO)
    done = subprocess.run(
        [sys.executable, str(client), str(db_path), "--flag-of-the-client"], timeout=30, check=False
    )
    assert done.returncode == 0
    argv = [sys.executable, str(client), str(db_path), "--flag-of-the-client"]
    listed = CliRunner().invoke(cli, ["ls", "--db", str(db_path)])
    assert f"<- {words.command(argv)}" in listed.output, listed.output
    db = connect(db_path, create=False)
    summary = summarize(db, 1)
    assert summary.client_argv is not None
    assert summary.client_argv[1:] == [str(client), str(db_path), "--flag-of-the-client"]
    assert "client:  quiet_client.py " in render_summary(summary, db_path)
    markdown = CliRunner().invoke(cli, ["export", "quiet", "--db", str(db_path)])
    assert "- Client: quiet_client.py " in markdown.output, markdown.output


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["python", "/home/u/acp/examples/echo_agent.py", "--x"], "echo_agent.py --x"),
        (["/usr/bin/python3.11", "-u", "-X", "dev", "agent.py"], "agent.py"),
        (["uv", "run", "--with", "acp", "python", "-m", "my_agent.main"], "my_agent.main"),
        (["npx", "-y", "@google/gemini-cli", "--experimental-acp"],
         "@google/gemini-cli --experimental-acp"),
        (["node", "/srv/agent/dist/index.js"], "dist/index.js"),
        (["env", "RUST_LOG=info", "bun", "run", "agent.ts"], "agent.ts"),
        (["uvx", "--from", "goose-ai", "goose", "acp"], "goose acp"),
        (["pnpm", "dlx", "claude-code-acp"], "claude-code-acp"),
        (["python", "-c", "import agent"], "python -c import agent"),  # inline code: as it is
        (["node"], "node"),
        (["/opt/tools/bin/my-agent", "--acp"], "my-agent --acp"),
    ],
)  # fmt: skip
def test_an_interpreter_is_named_by_what_it_runs(argv: list[str], shown: str) -> None:
    assert words.command(argv) == shown


def test_the_demo_hints_name_tools_that_are_not_on_path_by_their_path(db_path: Path) -> None:
    _recording(db_path)
    summary = summarize(connect(db_path, create=False), 1)
    programs = {"sqlite-utils": ".venv/bin/sqlite-utils", "datasette": ".venv/bin/datasette"}
    said = render_summary(summary, db_path, programs=programs)
    assert f"  .venv/bin/sqlite-utils {db_path} " in said
    assert f"  .venv/bin/datasette {db_path}" in said
    assert f"  sqlite-utils {db_path} " in render_summary(summary, db_path)
