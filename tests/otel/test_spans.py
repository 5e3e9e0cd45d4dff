"""The span model (acp_proxy/otel/spans.py, span_values.py, trace_ids.py) on frames built in
memory: no process, no SDK.

The peer tests (tests/integration/test_otel_peers.py) check the same model end to end on
recordings of the official SDK's demo pair; these cover what a demo conversation never shows.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.otel.span_values import CLIENT, ERROR, INTERNAL, ConnectionInfo, Options, Span
from acp_proxy.otel.spans import SpanBuilder
from acp_proxy.otel.trace_ids import parse_traceparent, span_id_of, trace_id_of
from tests.support.helpers import A2C, C2A, ERR, line, observe_all

UID = "0123456789abcdef0123456789abcdef"
START = 10**18
REMOTE_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
REMOTE_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{REMOTE_TRACE}-{REMOTE_SPAN}-01"


def request(id_: int, method: str, params: dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def result(id_: int, value: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": id_, "result": value})


def update(session: str, body: dict[str, Any], meta: dict[str, Any] | None = None) -> bytes:
    params: dict[str, Any] = {"sessionId": session, "update": body}
    if meta:
        params["_meta"] = meta
    return line({"jsonrpc": "2.0", "method": "session/update", "params": params})


def prompt(id_: int, text: str | None = None, meta: dict[str, Any] | None = None) -> bytes:
    params: dict[str, Any] = {"sessionId": "s1", "prompt": []}
    if text is not None:
        params["prompt"] = [{"type": "text", "text": text}]
    if meta:
        params["_meta"] = meta
    return request(id_, "session/prompt", params)


def chunk(text: str) -> bytes:
    body = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return update("s1", body)


def tool_update(sort: str = "tool_call", **fields: Any) -> bytes:
    return update("s1", {"sessionUpdate": sort, "toolCallId": "t1", **fields})


def handshake(version: int = 1, meta: dict[str, Any] | None = None) -> list[tuple[Any, bytes]]:
    params: dict[str, Any] = {
        "protocolVersion": version,
        "clientInfo": {"name": "ed", "version": "9"},
    }
    if meta:
        params["_meta"] = meta
    return [
        (C2A, request(0, "initialize", params)),
        (
            A2C,
            result(0, {"protocolVersion": version, "agentInfo": {"name": "bot", "version": "2"}}),
        ),
        (C2A, request(1, "session/new", {"cwd": "/w", "mcpServers": []})),
        (A2C, result(1, {"sessionId": "s1"})),
    ]


def build(exchange: list[tuple[Any, bytes]], options: Options | None = None) -> list[Span]:
    _, records = observe_all(exchange)
    builder = SpanBuilder(ConnectionInfo(UID, START, "lab"), options)
    return builder.feed_all(records) + builder.finish()


def by_name(spans: list[Span]) -> dict[str, Span]:
    named = {span.name: span for span in spans}
    assert len(named) == len(spans), [s.name for s in spans]
    return named


def test_the_trace_is_the_connection_uid_and_ids_are_stable() -> None:
    exchange = [
        *handshake(),
        (C2A, request(2, "session/prompt", {"sessionId": "s1", "prompt": []})),
    ]
    first, second = build(exchange), build(exchange)
    assert [(s.span_id, s.parent, s.start_ns, s.end_ns) for s in first] == [
        (s.span_id, s.parent, s.start_ns, s.end_ns) for s in second
    ]
    assert {s.trace_id for s in first} == {int(UID, 16)}
    assert trace_id_of(UID) == int(UID, 16)
    assert trace_id_of("not hex") == trace_id_of("not hex") != 0
    assert span_id_of(UID, "a") != span_id_of(UID, "b")
    assert len({s.span_id for s in first}) == len(first)


def test_a_v1_turn_ends_at_its_response_and_holds_its_tool_calls() -> None:
    exchange = [
        *handshake(),
        (C2A, prompt(2, "hi")),
        (A2C, tool_update(title="Run ls", kind="execute", status="pending")),
        (A2C, request(7, "terminal/create", {"sessionId": "s1", "command": "ls"})),
        (C2A, result(7, {"terminalId": "x"})),
        (A2C, tool_update("tool_call_update", status="failed")),
        (A2C, chunk("no")),
        (A2C, result(2, {"stopReason": "refusal"})),
    ]  # fmt: skip
    spans = by_name(build(exchange))
    connection, session = spans["acp connection"], spans["acp session"]
    turn, tool = spans["invoke_agent bot"], spans["execute_tool execute"]
    assert connection.parent is None
    assert connection.kind == INTERNAL
    assert session.parent == connection.ref
    assert turn.parent == session.ref
    assert turn.kind == CLIENT
    assert spans["session/prompt"].parent == turn.ref
    assert tool.parent == turn.ref
    assert spans["terminal/create"].parent == turn.ref
    assert spans["terminal/create"].attributes["acp.caller"] == "agent"
    assert spans["session/prompt"].attributes["acp.caller"] == "client"
    assert turn.attributes["acp.stop_reason"] == "refusal"
    assert turn.attributes["gen_ai.response.finish_reasons"] == ("refusal",)
    assert turn.attributes["gen_ai.conversation.id"] == "s1"
    assert (turn.attributes["gen_ai.agent.name"], turn.attributes["gen_ai.agent.version"]) == (
        "bot",
        "2",
    )
    assert tool.status == ERROR
    assert tool.attributes["error.type"] == "tool_error"
    assert tool.attributes["acp.tool_call.title"] == "Run ls"
    assert [e.attributes["acp.session_update"] for e in tool.events] == [
        "tool_call",
        "tool_call_update",
    ]
    assert [e.attributes["acp.session_update"] for e in turn.events] == ["agent_message_chunk"]
    assert turn.end_ns == spans["session/prompt"].end_ns
    assert connection.attributes["acp.client.name"] == "ed"
    assert connection.attributes["acp.connection.label"] == "lab"
    assert session.attributes["acp.unfinished"] is True  # never closed
    assert "acp.unfinished" not in turn.attributes


def test_a_v2_turn_ends_at_the_idle_state_update_not_at_its_response() -> None:
    exchange = [
        *handshake(version=2),
        (C2A, request(2, "session/prompt", {"sessionId": "s1", "prompt": []})),
        (A2C, result(2, {"messageId": "m1"})),
        (A2C, update("s1", {"sessionUpdate": "state_update", "state": "running"})),
        (
            A2C,
            update(
                "s1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            ),
        ),
    ]
    spans = by_name(build(exchange))
    turn, prompt = spans["invoke_agent bot"], spans["session/prompt"]
    assert prompt.end_ns < turn.end_ns
    assert turn.end_ns == max(s.end_ns for s in spans.values())
    assert turn.attributes["acp.stop_reason"] == "end_turn"
    assert turn.attributes["acp.message.id"] == "m1"


def test_error_responses_give_error_type_and_status() -> None:
    exchange = [
        *handshake(),
        (C2A, request(2, "session/prompt", {"sessionId": "s1", "prompt": []})),
        (
            A2C,
            line({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad prompt"}}),
        ),
        (C2A, request(3, "session/load", {"sessionId": "s9", "cwd": "/", "mcpServers": []})),
        (A2C, line({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no"}})),
    ]
    spans = by_name(build(exchange))
    prompt, turn = spans["session/prompt"], spans["invoke_agent bot"]
    assert prompt.attributes["error.type"] == "-32602"
    assert prompt.attributes["rpc.response.status_code"] == "-32602"
    assert prompt.status == ERROR
    assert prompt.status_message == "bad prompt"
    assert turn.status == ERROR
    assert turn.attributes["error.type"] == "-32602"
    assert prompt.attributes["jsonrpc.request.id"] == "2"


def test_a_traceparent_in_meta_moves_that_span_and_its_children_into_the_remote_trace() -> None:
    exchange = [
        *handshake(),
        (C2A, prompt(2, meta={"traceparent": TRACEPARENT})),
        (A2C, tool_update(title="x", status="completed")),
        (A2C, result(2, {"stopReason": "end_turn"})),
    ]  # fmt: skip
    spans = by_name(build(exchange))
    turn, session = spans["invoke_agent bot"], spans["acp session"]
    remote = parse_traceparent(TRACEPARENT)
    assert remote is not None
    assert turn.parent == remote
    assert turn.parent_remote
    assert turn.trace_id == int(REMOTE_TRACE, 16)
    assert turn.links == [session.ref]
    for child in ("session/prompt", "execute_tool"):
        assert spans[child].trace_id == turn.trace_id
        assert spans[child].parent == turn.ref
    assert session.trace_id == int(UID, 16)


def test_a_traceparent_on_initialize_puts_the_whole_connection_under_it() -> None:
    spans = build(handshake(meta={"traceparent": TRACEPARENT}))
    assert {s.trace_id for s in spans} == {int(REMOTE_TRACE, 16)}
    connection = by_name(spans)["acp connection"]
    assert connection.parent is not None
    assert connection.parent.span_id == int(REMOTE_SPAN, 16)


def test_traceparent_values_that_are_not_w3c_are_ignored() -> None:
    assert parse_traceparent(TRACEPARENT) is not None
    trace, span = REMOTE_TRACE, REMOTE_SPAN
    for bad in (None, 7, "", "00-abc-def-01", f"ff-{trace}-{span}-01", f"00-{'0' * 32}-{span}-01",
                f"00-{trace}-{'0' * 16}-01", f"00-{trace}-{span}-01-extra",
                f"00-{'g' * 32}-{span}-01"):  # fmt: skip
        assert parse_traceparent(bad) is None, bad
    # A later version may carry more fields after the four it shares with version 00.
    assert parse_traceparent(f"01-{REMOTE_TRACE}-{REMOTE_SPAN}-01-more") is not None


def test_notifications_are_events_capped_per_span() -> None:
    chunks = [
        (
            A2C,
            update(
                "s1",
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}},
            ),
        )
        for _ in range(10)
    ]
    exchange = [
        *handshake(),
        (C2A, request(2, "session/prompt", {"sessionId": "s1", "prompt": []})),
        *chunks,
    ]
    turn = by_name(build(exchange, Options(max_events=4)))["invoke_agent bot"]
    assert len(turn.events) == 4
    assert turn.dropped_events == 6
    assert turn.attributes["acp.unfinished"] is True  # no response before the end
    assert [e.attributes["acp.frame.seq"] for e in turn.events] == [6, 7, 8, 9]


def test_content_only_through_the_filter_and_plain_text_through_the_text_filter() -> None:
    exchange = [
        *handshake(),
        (C2A, prompt(2, "secret plan")),
        (A2C, tool_update(title="Read secret.txt", rawInput={"path": "secret.txt"})),
        (A2C, request(5, "fs/read_text_file", {"sessionId": "s1", "path": "secret.txt"})),
        (C2A, result(5, {"content": "secret contents"})),
        (A2C, tool_update("tool_call_update", status="completed", rawOutput={"lines": 1})),
        (A2C, chunk("secret ")),
        (A2C, chunk("answer")),
        (ERR, b"secret stderr\n"),
        (A2C, result(2, {"stopReason": "end_turn"})),
    ]  # fmt: skip

    def hide(text: str) -> str:
        return text.replace("secret", "[redacted:x:1]")

    def hide_all(value: Any, method: str | None) -> Any:
        if isinstance(value, str):
            return hide(value)
        if isinstance(value, list):
            return [hide_all(v, method) for v in value]
        if isinstance(value, dict):
            return {k: hide_all(v, method) for k, v in value.items()}
        return value

    plain = build(exchange, Options(text=hide))
    text = repr([(s.attributes, [e.attributes for e in s.events]) for s in plain])
    assert "secret" not in text
    assert "[redacted:x:1].txt" in text  # the title, always sent, went through the text filter
    for key in ("gen_ai.input.messages", "gen_ai.tool.call.arguments", "acp.request.params"):
        assert key not in text

    rich = by_name(build(exchange, Options(content=hide_all, text=hide)))
    every = repr([(s.attributes, [e.attributes for e in s.events]) for s in rich.values()])
    assert "secret" not in every
    turn = rich["invoke_agent bot"]
    assert '"[redacted:x:1] plan"' in str(turn.attributes["gen_ai.input.messages"])
    assert '"content":"[redacted:x:1] answer"' in str(turn.attributes["gen_ai.output.messages"])
    assert (
        rich["execute_tool"].attributes["gen_ai.tool.call.arguments"]
        == '{"path":"[redacted:x:1].txt"}'
    )
    assert rich["execute_tool"].attributes["gen_ai.tool.call.result"] == '{"lines":1}'
    assert "[redacted:x:1] contents" in str(
        rich["fs/read_text_file"].attributes["acp.response.result"]
    )
    stderr = [e for e in rich["acp connection"].events if e.name == "acp.stderr"]
    assert stderr[0].attributes["acp.stderr.text"] == "[redacted:x:1] stderr"


def test_unanswered_requests_and_open_spans_end_at_the_last_frame() -> None:
    exchange = [
        *handshake(),
        (C2A, request(2, "session/prompt", {"sessionId": "s1", "prompt": []})),
    ]
    spans = by_name(build(exchange))
    last = max(s.end_ns for s in spans.values())
    for name in ("session/prompt", "invoke_agent bot", "acp session", "acp connection"):
        assert spans[name].end_ns == last
        assert spans[name].attributes.get("acp.unfinished", name == "acp connection")
    assert spans["acp connection"].start_ns == START


def test_a_closed_session_ends_at_its_close_response() -> None:
    exchange = [
        *handshake(),
        (C2A, request(2, "session/close", {"sessionId": "s1"})),
        (A2C, result(2, {})),
        (
            A2C,
            update(
                "s1",
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "late"},
                },
            ),
        ),
    ]
    spans = build(exchange)
    sessions = [s for s in spans if s.name == "acp session"]
    assert len(sessions) == 1
    assert "acp.unfinished" not in sessions[0].attributes
    close = by_name(spans)["session/close"]
    assert sessions[0].end_ns == close.end_ns
    late = by_name(spans)["acp connection"].events
    assert [e.attributes.get("acp.session_update") for e in late] == ["agent_message_chunk"]


def test_malformed_frames_batches_and_unmatched_responses_are_connection_events() -> None:
    exchange = [(C2A, b"not json\n"), (A2C, result(42, {})), (C2A, b"[1,2]\n"), (C2A, b"{}\n")]
    connection = by_name(build(exchange))["acp connection"]
    assert [e.name for e in connection.events] == [
        "acp.frame.malformed", "acp.response.unmatched", "acp.frame.batch", "acp.frame.malformed",
    ]  # fmt: skip
    assert connection.attributes["acp.frames.malformed"] == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([C2A, A2C, ERR]), st.binary(max_size=60)), max_size=12))
def test_peer_bytes_never_raise(exchange: list[tuple[Any, bytes]]) -> None:
    spans = build([(d, data + b"\n") for d, data in exchange])
    assert spans[-1].name == "acp connection"
    assert all(span.end_ns >= span.start_ns for span in spans)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([C2A, A2C]), st.sampled_from(
    ["initialize", "session/new", "session/prompt", "session/update", "session/close", None]
), json_values, st.integers(0, 3)), max_size=12))  # fmt: skip
def test_odd_shapes_of_known_methods_never_raise(
    messages: list[tuple[Any, str | None, Any, int]],
) -> None:
    exchange = []
    for direction, method, params, id_ in messages:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_}
        if method is None:
            body["result"] = params
        else:
            body.update(method=method, params=params)
        exchange.append((direction, line(body)))
    spans = build(exchange, Options(content=lambda v, m: v))
    assert len({s.span_id for s in spans}) == len(spans)


def test_a_session_loaded_again_after_its_close_is_a_new_span() -> None:
    load = {"sessionId": "s1", "cwd": "/w", "mcpServers": []}
    exchange = [
        *handshake(),
        (C2A, request(2, "session/close", {"sessionId": "s1"})),
        (A2C, result(2, {})),
        (C2A, prompt(3, "to a closed session")),
        (A2C, result(3, {"stopReason": "end_turn"})),
        (C2A, request(4, "session/load", load)),
        (A2C, result(4, {})),
        (C2A, prompt(5, "again")),
        (A2C, result(5, {"stopReason": "end_turn"})),
    ]
    spans = build(exchange)
    assert len({s.span_id for s in spans}) == len(spans)
    sessions = [s for s in spans if s.name == "acp session"]
    assert [s.attributes.get("acp.session.opened_by") for s in sessions] == [
        "session/new", "session/load",
    ]  # fmt: skip
    turns = [s for s in spans if s.name == "invoke_agent bot"]
    connection = by_name([s for s in spans if s.name == "acp connection"])["acp connection"]
    assert turns[0].parent == connection.ref  # its session was closed
    assert turns[1].parent == sessions[1].ref
