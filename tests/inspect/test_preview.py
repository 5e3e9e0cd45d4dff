"""inspect/render/preview.py: one preview of a frame, the same words in ``show`` and the
inspector (tool calls and plans among them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_proxy.inspect.render.text import preview as terminal_preview
from acp_proxy.serve.ui.present import preview as page_preview
from acp_proxy.store import readers as store_read
from tests.support.fixtures_acp import update
from tests.support.helpers import A2C, C2A, ERR, line, write_recording

FRAMES = [
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "Hi"}]}})),
    (A2C, update("s", {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": "Hello\nthere"}})),
    (A2C, update("s", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.py",
                       "status": "pending", "content": []})),
    (A2C, update("s", {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                       "status": "completed"})),
    (A2C, update("s", {"sessionUpdate": "plan", "entries": [
        {"content": "look", "status": "completed", "priority": "high"},
        {"content": "fix", "status": "pending", "priority": "low"}]})),
    (A2C, update("s", {"sessionUpdate": "current_mode_update", "currentModeId": "code"})),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}})),
    (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})),
    (ERR, b"agent: warming up\n"),
]  # fmt: skip

EXPECTED = [
    '{"prompt":[{"type":"text","text":"Hi"}]}',
    "Hello there",
    "Read a.py pending",
    "completed",
    "[x] look (high) | [ ] fix (low)",
    "code",
    "-32603 boom",
    '{"stopReason":"end_turn"}',
    "agent: warming up",
]


@pytest.fixture
def rows(db_path: Path) -> list[store_read.FrameRow]:
    connection_id = write_recording(db_path, FRAMES)
    db = store_read.open_for_reading(db_path)
    try:
        return list(store_read.frames(db, connection_id))
    finally:
        db.close()


def test_show_and_the_inspector_preview_a_frame_in_the_same_words(
    rows: list[store_read.FrameRow],
) -> None:
    shown = [terminal_preview(row) for row in rows]
    paged = [
        page_preview({"head": row.raw, "size": row.size, "direction": row.direction,
                      "kind": row.kind})
        for row in rows
    ]  # fmt: skip
    assert shown == paged == EXPECTED


def test_only_the_start_of_a_large_frame_is_shown_as_text(
    rows: list[store_read.FrameRow],
) -> None:
    row = rows[1]
    head = row.raw[:40]
    assert page_preview(
        {"head": head, "size": row.size, "direction": "a2c", "kind": "notification"}
    ) == (head.decode())
