"""transcript.py invariants, with hypothesis.

- Applying the materialized (replay) form of a history gives the same history as applying the
  live stream it came from.
- Chunk boundaries never change the result: not how a message's text or a terminal's bytes are
  split into chunks, nor how the byte stream is split into reads.
"""

from __future__ import annotations

import base64
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.inspect.render.markdown import render_markdown
from acp_proxy.inspect.transcript.history import materialize
from acp_proxy.inspect.transcript.model import build
from acp_proxy.inspect.transcript.values import Message, SessionView, Terminal
from acp_proxy.protocol.acp import Direction
from tests.support.fixtures_transcript import (
    HANDSHAKE,
    SESSION,
    V2_CANCELLED,
    V2_SUBAGENT,
    V2_WALKTHROUGH,
    u,
)
from tests.support.helpers import observe_all

ids = st.sampled_from(["a", "b"])
texts = st.text(alphabet="xyz <&>\n`*", max_size=6)
blocks = st.builds(lambda t: {"type": "text", "text": t}, texts)
block_lists = st.lists(blocks, max_size=2)
ABSENT = object()


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A patch field: absent, null, or a value."""
    return st.one_of(st.just(ABSENT), st.none(), strategy)


def body(kind: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, **{k: v for k, v in fields.items() if v is not ABSENT}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


message_kinds = st.sampled_from(
    ["user_message", "agent_message", "agent_thought", "session_message"]
)
statuses = st.sampled_from(["pending", "completed"])
tool_contents = st.lists(st.builds(lambda b: {"type": "content", "content": b}, blocks), max_size=2)
plan_entries = st.lists(st.builds(lambda t: {"content": t, "status": "pending"}, texts), max_size=2)
compaction_statuses = st.sampled_from(["in_progress", "completed", "failed"])


def message(kind: str, i: str, content: Any, meta: Any, sender: Any) -> dict[str, Any]:
    return body(kind, messageId=i, content=content, _meta=meta, senderSessionId=sender)


def tool(i: str, title: Any, status: Any, content: Any) -> dict[str, Any]:
    return body("tool_call_update", toolCallId=i, title=title, status=status, content=content)


def tool_chunk(i: str, block: Any) -> dict[str, Any]:
    content = {"type": "content", "content": block}
    return body("tool_call_content_chunk", toolCallId=i, content=content)


def terminal(i: str, command: Any, output: Any) -> dict[str, Any]:
    snapshot = output if output in (ABSENT, None) else {"data": b64(output)}
    return body("terminal_update", terminalId=i, command=command, output=snapshot)


def compaction(i: str, status: str, summary: Any, error: Any) -> dict[str, Any]:
    return body("compaction_update", compactionId=i, status=status, summary=summary, error=error)


def plan(i: str, entries: Any) -> dict[str, Any]:
    return body("plan_update", plan={"type": "items", "planId": i, "entries": entries})


live_updates = st.one_of(
    st.builds(
        message, message_kinds, ids, maybe(block_lists), maybe(st.just({"m": 1})), maybe(ids)
    ),
    st.builds(
        lambda k, i, c: body(k + "_chunk", messageId=i, content=c), message_kinds, ids, blocks
    ),
    st.builds(tool, ids, maybe(texts), maybe(statuses), maybe(tool_contents)),
    st.builds(tool_chunk, ids, blocks),
    st.builds(terminal, ids, maybe(texts), maybe(st.binary(max_size=4))),
    st.builds(
        lambda i, d: body("terminal_output_chunk", terminalId=i, data=b64(d)),
        ids,
        st.binary(max_size=4),
    ),
    st.builds(plan, ids, plan_entries),
    st.builds(lambda i: body("plan_removed", planId=i), ids),
    st.builds(compaction, ids, compaction_statuses, maybe(block_lists), maybe(texts)),
    st.builds(
        lambda i, b: body("compaction_summary_chunk", compactionId=i, content=b), ids, blocks
    ),
    st.builds(lambda i, t: body("subagent_update", sessionId=i, title=t), ids, maybe(texts)),
    st.builds(lambda t: body("notice", severity="info", title=t or "n"), texts),
    st.builds(lambda x: body("_vendor/thing", x=x), st.integers(0, 3)),
    st.builds(lambda s: body("state_update", state=s), st.sampled_from(["running", "idle"])),
    st.builds(lambda n: body("usage_update", used=n, size=100), st.integers(0, 100)),
)


def session_after(updates: list[dict[str, Any]]) -> SessionView:
    view = build(observe_all([*HANDSHAKE, *(u(b) for b in updates)])[1])
    return view.session(SESSION) or SessionView(SESSION, None, (), ())


@settings(max_examples=300, deadline=None)
@given(st.lists(live_updates, max_size=25))
def test_materialized_history_equals_the_live_one(updates: list[dict[str, Any]]) -> None:
    live = session_after(updates)
    replayed = session_after(materialize(live))
    assert replayed.history == live.history
    assert not any(b["sessionUpdate"] == "notice" for b in materialize(live))


def test_materializing_the_draft_fixtures() -> None:
    for exchange in (V2_WALKTHROUGH, V2_CANCELLED, V2_SUBAGENT):
        for live in build(observe_all(exchange)[1]).sessions:
            assert session_after(materialize(live)).history == live.history


def split(draw: st.DrawFn, value: str | bytes) -> list[Any]:
    cuts = sorted(draw(st.sets(st.integers(1, max(len(value) - 1, 1)), max_size=4)))
    edges = [0, *[c for c in cuts if c < len(value)], len(value)]
    return [value[a:b] for a, b in itertools.pairwise(edges) if b > a] or [value[:0]]


@st.composite
def chunked_messages(
    draw: st.DrawFn,
) -> tuple[list[tuple[str, str]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Messages (id, text), and two streams of chunks that split each text differently."""
    messages = draw(
        st.lists(
            st.tuples(st.sampled_from(["m1", "m2", "m3"]), texts),
            min_size=1,
            max_size=4,
            unique_by=lambda m: m[0],
        )
    )
    streams = []
    for _ in range(2):
        stream = []
        for message_id, words in messages:
            for piece in split(draw, words):
                content = {"type": "text", "text": piece}
                stream.append(body("agent_message_chunk", messageId=message_id, content=content))
        streams.append(stream)
    return messages, streams[0], streams[1]


@settings(max_examples=150, deadline=None)
@given(chunked_messages())
def test_chunk_boundaries_never_change_messages(
    case: tuple[list[tuple[str, str]], list[Any], list[Any]],
) -> None:
    messages, first, second = case
    views = [session_after(stream) for stream in (first, second)]
    for view in views:
        found = [
            (m.message_id, "".join(b["text"] for b in m.content))
            for m in view.history
            if isinstance(m, Message)
        ]
        assert found == messages
    whole = [build(observe_all([*HANDSHAKE, *(u(b) for b in s)])[1]) for s in (first, second)]
    # The header counts frames, which differ; the conversation below it must not.
    pages = [render_markdown(v, timings=False).partition("## Session")[2] for v in whole]
    assert pages[0] == pages[1]


@settings(max_examples=100, deadline=None)
@given(st.data(), st.binary(max_size=40))
def test_chunk_boundaries_never_change_terminal_output(data: st.DataObject, output: bytes) -> None:
    pieces = split(data.draw, output)
    session = session_after(
        [body("terminal_output_chunk", terminalId="t", data=b64(p)) for p in pieces]
    )
    (terminal,) = [e for e in session.history if isinstance(e, Terminal)]
    assert terminal.output == output


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_read_boundaries_never_change_the_transcript(data: st.DataObject) -> None:
    exchange = V2_WALKTHROUGH + V2_CANCELLED[len(HANDSHAKE) :]
    stream = b"".join(d for _, d in exchange)
    # Re-split every direction's bytes at arbitrary points, keeping the interleaving per line.
    pieces: list[tuple[Direction, bytes]] = []
    for direction, chunk in exchange:
        pieces.extend((direction, p) for p in split(data.draw, chunk))
    assert b"".join(d for _, d in pieces) == stream
    one, other = (build(observe_all(e)[1]) for e in (exchange, pieces))
    assert [s.history for s in one.sessions] == [s.history for s in other.sessions]
    assert [[t.stop_reason for t in s.turns] for s in one.sessions] == [
        [t.stop_reason for t in s.turns] for s in other.sessions
    ]
