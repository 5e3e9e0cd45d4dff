"""One verdict: what the observer says a frame is, the store, the rules, `show`, the transcript,
export and replay all say (a response with both result and error is an error everywhere)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.check import engine
from acp_proxy.check.base import WARNING, Event, Rule, RuleInfo
from acp_proxy.check.engine import Checker
from acp_proxy.cli.main import main as cli
from acp_proxy.inspect.export import jsonl_lines, transcript_of
from acp_proxy.inspect.transcript.model import build
from acp_proxy.inspect.transcript.values import Call
from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.store import readers
from acp_proxy.store.frames import frames, scope
from acp_proxy.store.replay_reads import load
from tests.support.helpers import A2C, C2A, line, observe_all, write_recording

BOTH = b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}\n'
EXCHANGE = [
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "_vendor/x", "params": {}})),
    (A2C, BOTH),
]


class Seen(Rule):
    """Every message the rule engine hands to its rules, as (seq, kind, method, request seq)."""

    info = RuleInfo("ACP999", WARNING, "test: sees every message", "test", "none")
    methods = None
    log: ClassVar[list[tuple[int, str, str | None, int | None]]] = []

    def message(self, event: Event) -> None:
        request = event.request.seq if event.request is not None else None
        self.log.append((event.seq, event.kind, event.method, request))


def rule_engine_sees(records: list[FrameRecord], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    Seen.log = []
    monkeypatch.setattr(engine, "RULE_CLASSES", (*engine.RULE_CLASSES, Seen))
    checker = Checker(rules={"ACP999"})
    for record in records:
        checker.observe(record)
    checker.finish()
    return list(Seen.log)


def test_result_and_error_is_an_error_everywhere(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection_id = write_recording(db_path, EXCHANGE)
    with sqlite3.connect(db_path) as db:
        stored = db.execute(
            "SELECT kind, method, request_seq, error_code FROM frame WHERE seq = 2"
        ).fetchone()
        records = list(frames(db, scope(db, "last")))
        exported = [json.loads(x) for x in jsonl_lines(db, connection_id)][1:]
        view = transcript_of(db, connection_id)
        calls = list(readers.calls(db, connection_id))
    assert stored == ("error", "_vendor/x", 1, 1)
    assert rule_engine_sees(records, monkeypatch)[-1] == (2, "error", "_vendor/x", 1)

    shown = CliRunner().invoke(cli, ["show", "--json", "--db", str(db_path)])
    assert shown.exit_code == 0, shown.output
    assert [json.loads(x)["kind"] for x in shown.output.splitlines()] == ["request", "error"]
    assert exported[1]["kind"] == "error"

    (call,) = view.events
    assert isinstance(call, Call)
    assert (call.answered_seq, call.result) == (2, None)
    assert call.error == {"code": 1, "message": "x", "data": None}
    assert calls[0].is_error  # the latency table counts it as a failed call

    _, replayed = load(db_path, None)
    assert [f.kind for f in replayed] == ["request", "error"]


def test_check_flags_result_and_error(db_path: Path) -> None:
    write_recording(db_path, EXCHANGE)
    result = CliRunner().invoke(cli, ["check", "--db", str(db_path)])
    assert result.exit_code == 1, result.output
    assert "ACP001" in result.output
    assert "both result and error" in result.output


def test_batch_entries_are_correlated_by_the_observer(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = (
        b'[{"jsonrpc":"2.0","id":1,"result":{}},'
        b'{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":5,"message":"m"}}]\n'
    )
    exchange = [
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "_a", "params": {}})),
        (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "_b", "params": {}})),
        (A2C, batch),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {}})),  # a second answer: no request
    ]
    observer, records = observe_all(exchange)
    assert observer.pending == {}
    assert records[3].request_seq is None  # the batch answered request 1 already
    assert rule_engine_sees(records, monkeypatch)[2:] == [
        (3, "response", "_a", 1), (3, "error", "_b", 2), (4, "response", None, None),
    ]  # fmt: skip
    view = build(records)
    answered = {c.method: (c.answered_seq, c.error) for c in view.events if isinstance(c, Call)}
    assert answered == {"_a": (3, None), "_b": (3, {"code": 5, "message": "m", "data": None})}


# A small alphabet of frames, so that ids collide, requests get answered twice or never,
# batches mix requests and answers, and sessions are created and reused.
_IDS = st.sampled_from([0, 1, "1", 2.5, None])
_METHODS = st.sampled_from(["session/new", "session/prompt", "session/update", "_x", "initialize"])
_PARAMS = st.sampled_from(
    [
        {},
        {"sessionId": "s1"},
        {"sessionId": "s2", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m"}},
        {"toolCall": {"toolCallId": "t"}},
        [],
    ]
)
_RESULTS = st.sampled_from(
    [{}, {"sessionId": "s9"}, {"stopReason": "end_turn", "messageId": "u"}, {"protocolVersion": 1}]
)
_REQUEST = st.builds(
    lambda i, m, p: {"jsonrpc": "2.0", "id": i, "method": m, "params": p}, _IDS, _METHODS, _PARAMS
)
_MESSAGE = st.one_of(
    _REQUEST,
    st.builds(lambda m, p: {"jsonrpc": "2.0", "method": m, "params": p}, _METHODS, _PARAMS),
    st.builds(lambda i, r: {"jsonrpc": "2.0", "id": i, "result": r}, _IDS, _RESULTS),
    st.builds(lambda i: {"jsonrpc": "2.0", "id": i, "error": {"code": -1, "message": "e"}}, _IDS),
    st.builds(lambda i: {"id": i, "result": {}, "error": {"code": 1, "message": "x"}}, _IDS),
    st.sampled_from([{"id": True}, {"method": 5}, 7]),
)
_FRAME = st.one_of(
    _MESSAGE.map(lambda m: json.dumps(m).encode() + b"\n"),
    st.lists(_MESSAGE | st.just([]), max_size=3).map(lambda b: json.dumps(b).encode() + b"\n"),
    st.sampled_from([b"not json\n", b"\xff\n", b"\n"]),
)
_DIRECTIONS = st.sampled_from([C2A, A2C, Direction.AGENT_STDERR])
_EXCHANGE = st.lists(st.tuples(_DIRECTIONS, _FRAME), max_size=25)


@settings(max_examples=150, deadline=None)
@given(_EXCHANGE)
def test_reading_stored_frames_back_gives_the_stored_verdict(
    exchange: list[tuple[Direction, bytes]],
) -> None:
    _, records = observe_all(exchange)
    reader, rows = ConnectionObserver(), ConnectionObserver()
    for record in records:
        reading = reader.read(record.seq, record.direction, record.raw)
        assert reading.kind == record.kind
        row = rows.row(record.seq, record.direction, record.raw)
        assert (
            row._replace(mono_ns=record.mono_ns, wall_ns=record.wall_ns, offset=record.offset)
            == record
        )
        if record.kind in ("request", "notification", "response", "error"):
            (event,) = reading.events
            request_seq = event.request.seq if event.request is not None else None
            assert (event.kind, event.method, event.session_id, event.update_kind) == (
                record.kind, record.method, record.session_id, record.update_kind,
            )  # fmt: skip
            assert request_seq == record.request_seq
