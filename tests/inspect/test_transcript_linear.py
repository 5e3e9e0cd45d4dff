"""The transcript model is linear in the frames: one message of many chunks, interleaved with
the upserts and views that settle what chunks appended."""

from __future__ import annotations

import base64
import time
from typing import Any

from acp_proxy.inspect.transcript.model import Transcript
from acp_proxy.inspect.transcript.values import Compaction, Message, Terminal, ToolCall
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import FrameRecord
from tests.support.fixtures_acp import update
from tests.support.helpers import observe_all

HANDSHAKE = [
    (Direction.CLIENT_TO_AGENT, b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'),
    (Direction.AGENT_TO_CLIENT, b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n'),
]


def _frames(updates: list[dict[str, Any]]) -> list[FrameRecord]:
    exchange = HANDSHAKE + [(Direction.AGENT_TO_CLIENT, update("s1", u)) for u in updates]
    return observe_all(exchange)[1]


def _chunk(n: int, message_id: str | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"t{n} "},
    }  # fmt: skip
    if message_id is not None:
        chunk["messageId"] = message_id
    return chunk


def _seconds(frames: list[FrameRecord]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        transcript = Transcript(1)
        for frame in frames:
            transcript.apply(frame)
        transcript.view()
        best = min(best, time.process_time() - start)
    return best


def test_one_message_of_many_chunks_costs_time_linear_in_the_chunks() -> None:
    small, large = 2_000, 32_000  # linear: the ratio of the counts; quadratic: its square
    ratio = _seconds(_frames([_chunk(n) for n in range(large)])) / _seconds(
        _frames([_chunk(n) for n in range(small)])
    )
    assert ratio < 60, f"{large:,} chunks took {ratio:.0f}x the time of {small:,}"


def test_chunks_upserts_and_views_interleave_as_if_applied_one_by_one() -> None:
    chunks = [_chunk(n, "m1") for n in range(5)]
    frames = _frames([
        *chunks[:2],
        {"sessionUpdate": "agent_message", "messageId": "m1", "title": "kept"},
        *chunks[2:4],
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "run"},
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1",
         "content": {"type": "content", "content": {"type": "text", "text": "a"}}},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "x",
         "data": base64.b64encode(b"ab").decode()},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "not base64!"},
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
         "content": {"type": "text", "text": "sum"}},
        chunks[4],
    ])  # fmt: skip
    transcript = Transcript(1)
    for frame in frames[:-1]:
        transcript.apply(frame)
    first = transcript.view()  # settles what was appended so far
    transcript.apply(frames[-1])
    second = transcript.view()
    message = first.sessions[0].timeline[0]
    assert isinstance(message, Message)
    assert [b["text"] for b in message.content] == ["t0 ", "t1 ", "t2 ", "t3 "]
    assert message.fields == {"title": "kept"}
    message = second.sessions[0].timeline[0]
    assert isinstance(message, Message)
    assert [b["text"] for b in message.content] == ["t0 ", "t1 ", "t2 ", "t3 ", "t4 "]
    tool, terminal, compaction = second.sessions[0].timeline[1:4]
    assert isinstance(tool, ToolCall)
    assert len(tool.content) == 1
    assert isinstance(terminal, Terminal)
    assert (terminal.output, terminal.bad_chunks) == (b"ab", 1)
    assert isinstance(compaction, Compaction)
    assert compaction.summary == ({"type": "text", "text": "sum"},)


def test_an_upsert_replacing_content_drops_what_chunks_appended_before_it() -> None:
    frames = _frames([
        _chunk(0, "m1"), _chunk(1, "m1"),
        {"sessionUpdate": "agent_message", "messageId": "m1",
         "content": [{"type": "text", "text": "whole"}]},
        _chunk(2, "m1"),
    ])  # fmt: skip
    transcript = Transcript(1)
    for frame in frames:
        transcript.apply(frame)
    message = transcript.view().sessions[0].timeline[0]
    assert isinstance(message, Message)
    assert [b["text"] for b in message.content] == ["whole", "t2 "]
