"""serve/mcp: the tools' work without MCP: bounds, paging, filters, mistakes, the missing SDK."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from acp_proxy.serve.mcp.bounds import MIN_MAX_BYTES, cut_text, fit_items
from acp_proxy.serve.mcp.copies import Copies
from acp_proxy.serve.mcp.library import Library, ToolMistake
from acp_proxy.share.secrets import Finder
from acp_proxy.store.search import open_for_search
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import A2C, line, write_recording

SECRET = "sk-ant-" + "x7Y2" * 8


def _big(db_path: Path) -> None:
    chunks = [
        (A2C, line({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "sess_1", "update": {"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": f"chunk {i} " + "lorem ipsum " * (i % 50)}}}}))
        for i in range(400)
    ]  # fmt: skip
    huge = line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess_1",
                 "update": {"sessionUpdate": "agent_message_chunk",
                 "content": {"type": "text", "text": "huge " * 40000 + SECRET}}}})  # fmt: skip
    write_recording(db_path, [*V1_CONVERSATION, *chunks, (A2C, huge)], label="big")


def library(db_path: Path, max_bytes: int = MIN_MAX_BYTES, *, redact: bool = True) -> Library:
    db, writable = open_for_search(db_path)
    finder = Finder({}, home="/home/u", user="u") if redact else None
    return Library(Copies(db, finder), max_bytes, writable=writable)


def fits(result: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    assert len(orjson.dumps(result)) <= max_bytes, len(orjson.dumps(result))
    return result


def test_every_result_fits_and_pages_reach_everything(db_path: Path) -> None:
    _big(db_path)
    lib = library(db_path)
    seqs: list[int] = []
    after = 0
    while True:
        page = fits(lib.frames("big", after_seq=after, limit=200), MIN_MAX_BYTES)
        seqs += [f["seq"] for f in page["frames"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert seqs == list(range(1, 418))
    hits, after = [], 0
    while True:
        found = fits(lib.search("lorem ipsum", limit=200, after=after), MIN_MAX_BYTES)
        hits += [h["seq"] for h in found["hits"]]
        if found["next"] is None:
            break
        after = found["next"]
    assert len(hits) == len(set(hits)) == 392  # every chunk but the 8 with no lorem (i % 50 == 0)
    for result in (
        lib.recording_summary("big"),
        lib.frame("big", 417),
        lib.check("big"),
        lib.conversation("big"),
        lib.method_stats("big"),
        lib.list_recordings(),
    ):
        fits(result, MIN_MAX_BYTES)  # fmt: skip


def test_a_huge_frame_is_paged_by_offset_and_stays_redacted(db_path: Path) -> None:
    _big(db_path)
    lib = library(db_path, 8192)
    body, offset = "", 0
    while offset is not None:
        page = fits(lib.frame("big", 417, offset), 8192)
        body += page["frame"]["body"]
        offset = page["frame"]["body_next_offset"]
    message = orjson.loads(body)
    assert message["params"]["update"]["content"]["text"].endswith("[redacted:api-key:1]")
    assert SECRET not in body
    plain = library(db_path, 8192, redact=False).frame("big", 417, 200_000)["frame"]["body"]
    assert SECRET in plain


def test_list_filters_and_paging(db_path: Path) -> None:
    for label in ("alpha", "beta", "gamma"):
        write_recording(db_path, V1_CONVERSATION, label=label)
    write_recording(db_path, V2_CONVERSATION, label="delta")
    lib = library(db_path)
    assert [r["label"] for r in lib.list_recordings()["recordings"]] == [
        "delta", "gamma", "beta", "alpha",
    ]  # fmt: skip
    first = lib.list_recordings(limit=2)
    assert [r["id"] for r in first["recordings"]] == [4, 3]
    assert first["next"] == f"{10**18}:3"
    page = lib.list_recordings(limit=2, before=first["next"])
    assert [r["id"] for r in page["recordings"]] == [2, 1]
    assert [r["label"] for r in lib.list_recordings(agent="v2")["recordings"]] == ["delta"]
    assert [r["label"] for r in lib.list_recordings(label="AL")["recordings"]] == ["alpha"]
    assert lib.list_recordings(since="1h")["recordings"] == []  # recorded in 2001


def test_mistakes_say_what_to_do(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    lib = library(db_path)
    with pytest.raises(ToolMistake, match="list_recordings shows the ids"):
        lib.frames("nope")
    with pytest.raises(ToolMistake, match="has no frame 999"):
        lib.frame("v1", 999)
    with pytest.raises(ToolMistake, match="bad regular expression"):
        lib.search("(", regex=True)
    with pytest.raises(ToolMistake, match="turn is 1 to 1"):
        lib.conversation("v1", turn=2)
    with pytest.raises(ToolMistake, match="cannot read"):
        lib.search("x", since="soon")
    with pytest.raises(ToolMistake):
        lib.check("v1", select=["NOPE999"])


def test_bounds_helpers() -> None:
    items = [{"n": i, "pad": "x" * 100} for i in range(100)]
    page = fit_items({"items": []}, "items", items, 2000, lambda i: i["n"])
    assert 0 < len(page["items"]) < 100
    assert page["next"] == page["items"][-1]["n"]
    assert page["truncated"]
    assert len(orjson.dumps(page)) <= 2000
    assert fit_items({}, "items", items[:3], 2000, lambda i: i["n"])["next"] is None
    assert cut_text("abcdef", 2, 5) == ("cde", 5)  # five bytes: "cde" with its quotes
    assert cut_text("abcdef", 3, 10) == ("def", None)


def test_without_the_sdk_one_line_and_exit_2(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec

    def hide_mcp(name: str, *args: Any) -> Any:
        return None if name == "mcp" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", hide_mcp)
    result = CliRunner().invoke(cli, ["mcp", "--db", str(db_path)])
    assert result.exit_code == 2
    assert capfd.readouterr().err == (
        "acp-proxy: the MCP server needs the MCP Python SDK: pip install 'acp-proxy[mcp]'\n"
    )


def test_a_missing_database_is_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 2
    assert capfd.readouterr().err.startswith("acp-proxy: no recording database at ")


def test_a_search_scans_without_keeping_other_tools_waiting(db_path: Path) -> None:
    """The scan runs on the search's own connection, outside the lock every other tool takes."""
    import threading

    from acp_proxy.store.readers import open_for_reading

    write_recording(db_path, V1_CONVERSATION, label="one")
    db, writable = open_for_search(db_path)
    scanning, answered = threading.Event(), threading.Event()

    def scanner() -> Any:
        scanning.set()
        assert answered.wait(30), "list_recordings waited for the search"
        return open_for_reading(db_path)

    lib = Library(Copies(db, None), MIN_MAX_BYTES, writable=writable, scanner=scanner)
    found: list[dict[str, Any]] = []
    search = threading.Thread(target=lambda: found.append(lib.search("Hello")))
    search.start()
    assert scanning.wait(30)
    with lib.lock:  # as the server runs every other tool
        listed = lib.list_recordings()
    answered.set()
    search.join(30)
    assert [r["label"] for r in listed["recordings"]] == ["one"]
    assert [h["seq"] for h in found[0]["hits"]] == [11]


def test_patterns_re2_refuses_are_mistakes(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="one")
    for pattern in (r"(a)\1", "(?=a)", "(?<!a)b", "("):
        with pytest.raises(ToolMistake, match="RE2"):
            library(db_path).search(pattern, regex=True)


def test_a_result_still_holding_a_secret_is_withheld(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last gate: whatever a tool returns is verified, through the real MCP client."""
    import asyncio

    from mcp import Client

    from acp_proxy.serve.mcp.server import build_server

    write_recording(db_path, V1_CONVERSATION, label="one")
    lib = library(db_path)
    with pytest.raises(ToolMistake, match="withheld"):
        lib.verified({"note": f"key {SECRET}"})
    assert lib.verified({"note": "nothing"}) == {"note": "nothing"}
    monkeypatch.setattr(lib, "method_stats", lambda ref: {"id": 1, "note": f"key {SECRET}"})

    async def ask() -> Any:
        async with Client(build_server(lib)) as client:
            return await client.call_tool("method_stats", {"ref": "one"})

    result = asyncio.run(ask())
    assert result.is_error
    said = " ".join(getattr(c, "text", "") for c in result.content)
    assert "withheld" in said
    assert SECRET not in said
    assert SECRET not in str(result.structured_content)


@pytest.mark.parametrize("text", ["é" * 5000, "\x01" * 5000, "😀a" * 3000, "plain " * 900])
def test_cut_text_keeps_each_piece_within_its_bytes_and_loses_nothing(text: str) -> None:
    from acp_proxy.serve.mcp.bounds import size

    pieces, offset = [], 0
    while True:
        piece, following = cut_text(text, offset, 1000)
        assert size(piece) <= 1000
        pieces.append(piece)
        if following is None:
            break
        offset = following
    assert "".join(pieces) == text


def _set_start(db_path: Path, connection_id: int, started_ns: int) -> None:
    """As an import of a recording made earlier: its start, and it has ended."""
    db = sqlite3.connect(db_path)
    db.execute(
        "UPDATE connection SET started_ns = ?, status = 'exited' WHERE id = ?",
        (started_ns, connection_id),
    )
    db.commit()
    db.close()


def _ls_order(db_path: Path) -> list[int]:
    out = CliRunner().invoke(cli, ["ls", "--all", "--json", "--db", str(db_path)]).output
    return [orjson.loads(line)["id"] for line in out.splitlines()]


def test_paging_is_ls_order_reversed_and_stable_while_recordings_come_and_go(
    db_path: Path,
) -> None:
    # Starts that disagree with the ids, as imports of older recordings give.
    starts = {1: 50, 2: 10, 3: 40, 4: 20, 5: 30, 6: 40}
    for connection_id, start in starts.items():
        write_recording(db_path, V1_CONVERSATION, label=f"r{connection_id}")
        _set_start(db_path, connection_id, start * 10**15)
    newest_first = list(reversed(_ls_order(db_path)))
    assert newest_first == [1, 6, 3, 5, 4, 2]  # by start, then id
    assert [r["id"] for r in library(db_path).list_recordings()["recordings"]] == newest_first

    listed: list[int] = []
    cursor = None
    for step in range(10):
        page = library(db_path).list_recordings(limit=1, before=cursor)
        listed += [r["id"] for r in page["recordings"]]
        if step == 1:  # between pages: a new recording, one deleted unseen, the cursor's own gone
            write_recording(db_path, V1_CONVERSATION, label="new")
            CliRunner().invoke(cli, ["delete", "4", "--db", str(db_path)], input="y\n")
            CliRunner().invoke(cli, ["delete", str(listed[-1]), "--db", str(db_path)], input="y\n")
            assert 4 not in _ls_order(db_path)
            assert listed[-1] not in _ls_order(db_path)
        cursor = page["next"]
        if cursor is None:
            break
    assert listed == [1, 6, 3, 5, 2]  # every one there throughout, once, in order; 4 went


def test_a_cursor_that_is_not_one_is_a_tool_mistake(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION)
    with pytest.raises(ToolMistake, match="not a cursor"):
        library(db_path).list_recordings(before="12")


def test_a_remote_recordings_frames_say_their_stream_through_the_redacted_copy(
    db_path: Path,
) -> None:
    from tests.support.remote_recordings import http_exchanges, http_frames, write_remote

    write_remote(db_path, "http", http_exchanges(), http_frames(), label="remote")
    frames = library(db_path).frames("remote", None, None, None, None, 0, 50)["frames"]
    assert [(f["stream"], f["exchange"], f["http_status"]) for f in frames] == [
        ("post", 1, 200), ("post_answer", 1, 200), ("post", 3, 202), ("connection_sse", 2, 200),
        ("post", 5, 202), ("session_sse", 4, 200), ("session_sse", 4, 200),
    ]  # fmt: skip
