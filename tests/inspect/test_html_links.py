"""The HTML export shows what the Markdown does, links resource links and items to frames."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, line, write_recording

S = "sess_1"


def _conversation() -> list[tuple[object, bytes]]:
    hello = {"protocolVersion": 1, "clientCapabilities": {}}
    prompt = [
        {"type": "text", "text": "look at"},
        {"type": "resource_link", "uri": "https://example.com/a.py", "name": "a.py"},
        {"type": "resource_link", "uri": "javascript:alert(1)", "name": "evil"},
    ]
    tool = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.py",
            "kind": "read", "status": "completed",
            "locations": [{"path": "/src/a.py", "line": 7}]}  # fmt: skip
    return [
        (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})),
        (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})),
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                    "params": {"cwd": "/", "mcpServers": []}})),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": S}})),
        (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                    "params": {"sessionId": S, "prompt": prompt}})),
        (A2C, update(S, tool)),
        (A2C, update(S, {"sessionUpdate": "usage_update", "used": 1200, "size": 200000})),
        (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
    ]  # fmt: skip


def test_html_has_locations_usage_links_and_frame_anchors(db_path: Path) -> None:
    write_recording(db_path, _conversation(), label="links")  # type: ignore[arg-type]
    page = CliRunner().invoke(cli, ["export", "links", "--format", "html", "--db", str(db_path)])
    assert page.exit_code == 0, page.output
    html = page.output
    assert '<a href="https://example.com/a.py" rel="noreferrer noopener">a.py</a>' in html
    assert 'href="javascript:' not in html
    assert "<code>javascript:alert(1)</code>" in html
    assert "<code>/src/a.py</code> line 7" in html
    assert "(read)" in html
    assert "1200 / 200000 tokens" in html
    assert '<tr id="f5" ' in html
    assert 'href="#f5">frame 5</a>' in html  # the prompt and the user's message
    assert 'href="#f6">frame 6</a>' in html  # the tool call
    markdown = CliRunner().invoke(cli, ["export", "links", "--db", str(db_path)]).output
    assert "/src/a.py" in markdown  # the same facts as the Markdown
    assert "1200 / 200000 tokens" in markdown
