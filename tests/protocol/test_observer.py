"""ConnectionObserver: parsed columns, response naming per direction, initialize facts."""

from __future__ import annotations

from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.protocol.wire import Frame
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import A2C, C2A, ERR, observe_all


def by_seq(records: list[FrameRecord]) -> dict[int, FrameRecord]:
    return {r.seq: r for r in records}


def test_v1_columns_and_response_naming() -> None:
    observer, records = observe_all(V1_CONVERSATION)
    rows = by_seq(records)
    assert [r.seq for r in records] == list(range(1, len(V1_CONVERSATION) + 1))
    init_resp = rows[2]
    assert (init_resp.kind, init_resp.method, init_resp.request_seq) == (
        "response",
        "initialize",
        1,
    )
    assert rows[3].kind == "stderr"
    assert rows[3].direction == "stderr"
    assert rows[5].session_id == "sess_1"  # session/new response carries the new id
    assert rows[5].method == "session/new"
    thought = rows[7]
    assert (thought.update_kind, thought.message_id) == ("agent_thought_chunk", "m0")
    assert rows[8].tool_call_id == "call_1"
    permission = rows[9]
    assert (permission.kind, permission.rpc_id, permission.tool_call_id) == ("request", 0, "call_1")
    # The client's answer to the agent's id 0 is not confused with the client's own id 0.
    answer = rows[10]
    assert (answer.method, answer.request_seq, answer.session_id) == (
        "session/request_permission", 9, "sess_1",
    )  # fmt: skip
    assert rows[12].update_kind == "_vendor.example/unknown"
    assert rows[13].kind == "notification"
    assert rows[13].method == "_zed.dev/ping"
    end = rows[14]
    assert (end.method, end.stop_reason, end.request_seq, end.session_id) == (
        "session/prompt", "end_turn", 6, "sess_1",
    )  # fmt: skip
    error = rows[16]
    assert (error.kind, error.rpc_id, error.error_code, error.method) == (
        "error", "3", -32602, "session/set_mode",
    )  # fmt: skip
    facts = observer.facts()
    assert facts.protocol_version == 1
    assert facts.client_info == {"name": "zed", "version": "1.0"}
    assert facts.agent_info == {"name": "agent-x", "version": "2.0"}


def test_v2_prompt_receipt_and_idle_stop_reason() -> None:
    observer, records = observe_all(V2_CONVERSATION)
    rows = by_seq(records)
    receipt = rows[7]
    assert (receipt.method, receipt.message_id, receipt.stop_reason) == (
        "session/prompt", "msg_u1", None,
    )  # fmt: skip
    assert rows[9].update_kind == "notice"
    idle = rows[11]
    assert (idle.update_kind, idle.stop_reason) == ("state_update", "end_turn")
    facts = observer.facts()
    assert facts.protocol_version == 2
    assert facts.client_info == {"name": "editor", "version": "9"}
    assert facts.agent_info == {"name": "agent-v2", "version": "0.2"}


def test_flags_for_bad_input() -> None:
    _, records = observe_all(
        [
            (C2A, b"\xff\xfe\n"),
            (C2A, b"not json\n"),
            (C2A, b'{"id":1,"method":"x"}\n'),
            (A2C, b'[{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file"}]\n'),
            (C2A, b'{"jsonrpc":"2.0","id":9,"result":{"content":""}}\n'),
            (C2A, b'{"jsonrpc":"2.0","id":18446744073709551615,"method":"big"}\n'),
        ]
    )
    utf8, not_json, no_version, batch, answer, big = records
    assert (utf8.bad_json, utf8.bad_utf8, utf8.kind) == (1, 1, "unparseable")
    assert (not_json.bad_json, not_json.bad_utf8) == (1, 0)
    assert (no_version.not_jsonrpc, no_version.kind) == (1, "request")
    assert (batch.batch, batch.kind) == (1, "batch")
    assert (answer.method, answer.request_seq) == ("fs/read_text_file", 4)
    assert big.rpc_id == "18446744073709551615"  # past 64 bits: kept as text


def test_unterminated_last_line_is_flagged() -> None:
    record = ConnectionObserver().observe(ERR, Frame(b"partial", 0, complete=False), 1, 2)
    assert record.no_newline == 1
    assert record.raw == b"partial"
