"""The replay engine (acp_proxy/replay.py), sans I/O: matching, ids, timing, endings, history."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.replay.engine import ERROR_CODE, Options
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION, update
from tests.support.fixtures_replay import V1_LOAD, V2_RESUME
from tests.support.fixtures_transcript import V2_CANCELLED, V2_WALKTHROUGH
from tests.support.helpers import A2C, C2A, line
from tests.support.replay_helpers import (
    agent_bytes,
    client_frames,
    engine,
    lines,
    play,
    recorded,
    run_until_done,
)  # fmt: skip

SECOND = 10**9
FIXTURES = {"v1": V1_CONVERSATION, "v2": V2_CONVERSATION, "v2-walkthrough": V2_WALKTHROUGH,
            "v2-cancelled": V2_CANCELLED}  # fmt: skip


@pytest.mark.parametrize("name", FIXTURES)
def test_a_client_like_the_recorded_one_gets_the_recorded_bytes_less_notices(name: str) -> None:
    exchange = FIXTURES[name]
    replay = engine(exchange)
    out = play(replay, client_frames(exchange))
    assert out == agent_bytes(exchange)
    assert not replay.diverged, replay.notes
    assert replay.ending == "the client closed the connection"
    notices = sum(b'"sessionUpdate":"notice"' in raw for _, raw in exchange)
    assert replay.notices == notices


def test_v2_walkthrough_keeps_receipt_states_and_unknown_kinds() -> None:
    out = lines(play(engine(V2_WALKTHROUGH), client_frames(V2_WALKTHROUGH)))
    receipt = next(m for m in out if m.get("id") == 2)
    assert receipt["result"] == {"messageId": "msg_user_8f7a1"}
    states = [
        m["params"]["update"]
        for m in out
        if m.get("params", {}).get("update", {}).get("sessionUpdate") == "state_update"
    ]
    assert [s["state"] for s in states] == ["running", "requires_action", "running", "idle"]
    assert states[-1]["stopReason"] == "end_turn"
    kinds = [m.get("params", {}).get("update", {}).get("sessionUpdate") for m in out]
    assert "notice" not in kinds
    # the live compaction sequence is not history replay: it goes out as recorded
    assert kinds.count("compaction_update") == 2
    assert "compaction_summary_chunk" in kinds


def test_unknown_update_kinds_and_extension_messages_go_out_verbatim() -> None:
    out = play(engine(V1_CONVERSATION), client_frames(V1_CONVERSATION))
    unknown = update("sess_1", {"sessionUpdate": "_vendor.example/unknown", "x": 1})
    assert unknown in out.splitlines(keepends=True)


def test_responses_carry_the_clients_own_id_bytes() -> None:
    exchange = V1_CONVERSATION
    ids = [b'"c-0"', b"10", b"1.0", b'"3"']
    client = []
    for frame in client_frames(exchange):
        message = json.loads(frame)
        if "method" in message and "id" in message and message["method"] != "_zed.dev/ping":
            live = ids[len([c for c in client if b'"method"' in c and b'"id"' in c])]
            old = b'"id":' + json.dumps(message["id"]).encode()
            frame = frame.replace(old, b'"id":' + live, 1)  # noqa: PLW2901
        client.append(frame)
    replay = engine(exchange)
    out = play(replay, client).splitlines(keepends=True)
    expected = agent_bytes(exchange).splitlines(keepends=True)
    assert len(out) == len(expected)
    for got, want in zip(out, expected, strict=True):
        message = json.loads(want)
        if "result" in message or "error" in message:
            recorded_id = json.dumps(message["id"]).encode()
            if message["id"] == 0 and b"protocolVersion" not in want:
                continue
            live = ids[[0, 1, 2, "3"].index(message["id"])]
            assert got == want.replace(b'"id":' + recorded_id, b'"id":' + live, 1)
        else:
            assert got == want  # agent requests keep their recorded ids, the rest its bytes
    assert not replay.diverged, replay.notes


def test_requests_with_equal_keys_are_taken_in_recorded_order() -> None:
    exchange = [
        (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/a"}})),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "first"}})),
        (C2A, line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/b"}})),
        (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "second"}})),
    ]  # fmt: skip
    live = [
        line({"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": "/x"}}),
        line({"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": "/y"}}),
    ]
    out = lines(play(engine(exchange), live))
    assert [(m["id"], m["result"]["sessionId"]) for m in out] == [(7, "first"), (8, "second")]


def test_out_of_order_requests_match_by_key_and_answers_keep_recorded_order() -> None:
    def prompt(i: int, text: str) -> bytes:
        params = {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}
        return line({"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": params})

    exchange = [
        (C2A, prompt(1, "a")),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {}})),
        (C2A, prompt(2, "b")),
        (A2C, line({"jsonrpc": "2.0", "id": 2, "result": {}})),
    ]
    replay = engine(exchange)
    replay.receive(prompt(5, "b"), 0)
    assert replay.advance(0).out == b""  # b's answer waits for a, as recorded
    replay.receive(prompt(6, "a"), 0)
    assert [m["id"] for m in lines(replay.advance(0).out)] == [6, 5]


def test_a_different_prompt_is_a_mismatch_naming_the_expected_request() -> None:
    frames = client_frames(V1_CONVERSATION)
    frames[2] = frames[2].replace(b'"hi"', b'"bye"')
    replay = engine(V1_CONVERSATION)
    out = lines(play(replay, frames[:3], close=False))
    error = out[-1]
    assert error["id"] == 2
    assert error["error"]["code"] == ERROR_CODE
    assert "session/prompt request (recorded seq 6)" in error["error"]["message"]
    assert '"text":"hi"' in error["error"]["message"]
    assert replay.ending is not None
    assert replay.ending.startswith("mismatch")
    assert replay.diverged
    assert replay.advance(0).done


def test_continue_lets_a_different_prompt_take_the_recorded_ones_place() -> None:
    frames = client_frames(V1_CONVERSATION)
    frames[2] = frames[2].replace(b'"hi"', b'"bye"')
    replay = engine(V1_CONVERSATION, Options(on_mismatch="continue"))
    out = play(replay, frames)
    assert out == agent_bytes(V1_CONVERSATION)
    assert replay.diverged
    assert "differs at $.params.prompt[0].text" in replay.notes[0].text


def test_an_unexpected_method_gets_an_error_and_continue_goes_on() -> None:
    frames = client_frames(V1_CONVERSATION)
    odd = line({"jsonrpc": "2.0", "id": 99, "method": "_x/unknown", "params": {}})
    replay = engine(V1_CONVERSATION, Options(on_mismatch="continue"))
    out = play(replay, [frames[0], odd, *frames[1:]])
    error = next(m for m in lines(out) if m.get("id") == 99)
    assert error["error"]["code"] == ERROR_CODE
    assert "no recorded request matches this _x/unknown" in error["error"]["message"]
    assert out.replace(line(error), b"") == agent_bytes(V1_CONVERSATION)
    assert replay.diverged
    assert replay.ending == "the client closed the connection"


def test_a_permission_never_answered_times_out_and_the_prompt_gets_an_error() -> None:
    frames = client_frames(V1_CONVERSATION)[:3]  # initialize, session/new, prompt; no answer
    replay = engine(V1_CONVERSATION, Options(timeout_ns=2 * SECOND))
    out = play(replay, frames, now=0, close=False)
    assert b"session/request_permission" in out
    step = replay.advance(SECOND)
    assert not step.done
    assert step.wake_at == 2 * SECOND
    rest, ended = run_until_done(replay, SECOND)
    assert ended == 2 * SECOND
    error = lines(rest)[-1]
    assert error["id"] == 2
    assert error["error"]["code"] == ERROR_CODE
    assert (
        "timed out after 2s waiting for the client's answer to session/request_permission"
        in (error["error"]["message"])
    )
    assert replay.diverged


def test_a_different_answer_is_noted_and_replay_goes_on() -> None:
    frames = client_frames(V1_CONVERSATION)
    frames[3] = frames[3].replace(b'"allow"', b'"reject"')
    replay = engine(V1_CONVERSATION)
    assert play(replay, frames) == agent_bytes(V1_CONVERSATION)
    assert replay.diverged
    assert "answer to session/request_permission (id 0) differs" in replay.notes[0].text
    assert "$.result.outcome.optionId" in replay.notes[0].text


def test_a_client_that_stops_early_diverges_and_one_that_lingers_ends_quietly() -> None:
    early = engine(V1_CONVERSATION)
    play(early, client_frames(V1_CONVERSATION)[:2])
    assert early.diverged
    assert "closed the connection before sending session/prompt" in str(early.ending)
    lingering = engine(V1_CONVERSATION, Options(timeout_ns=SECOND))
    play(lingering, client_frames(V1_CONVERSATION), close=False)
    _, ended = run_until_done(lingering, 0)
    assert ended == SECOND
    assert not lingering.diverged


def test_cancel_request_names_the_clients_ids() -> None:
    prompt = {"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": "s"}}
    cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 4}}
    exchange = [
        (C2A, line(prompt)),
        (C2A, line(cancel)),
        (A2C, line({"jsonrpc": "2.0", "id": 4, "error": {"code": -32800, "message": "c"}})),
    ]
    replay = engine(exchange)
    live = [line({**prompt, "id": "p"}), line({**cancel, "params": {"requestId": "p"}})]
    out = lines(play(replay, live))
    assert out == [{"jsonrpc": "2.0", "id": "p", "error": {"code": -32800, "message": "c"}}]
    assert not replay.diverged, replay.notes


def test_recorded_timing_scaled_and_capped() -> None:
    # observe_all puts frames 1 ms apart: a2c frames are due 1 ms after what precedes them
    exchange = V2_CONVERSATION
    for options, gap in [(Options(scale=1.0), 1_000_000), (Options(scale=0.5), 500_000),
                         (Options(scale=1.0, max_gap_ns=200_000), 200_000)]:  # fmt: skip
        replay = engine(exchange, options)
        for raw in client_frames(exchange)[:2]:
            replay.receive(raw, 0)
        step = replay.advance(0)
        assert step.out == b""
        assert step.wake_at == gap
        assert replay.advance(gap - 1).out == b""
        assert b'"protocolVersion":2' in replay.advance(gap).out
    asap = engine(exchange)
    for raw in client_frames(exchange):
        asap.receive(raw, 0)
    assert asap.advance(0).out == agent_bytes(exchange)


def test_history_replay_is_materialized() -> None:
    replay = engine(V2_RESUME)
    out = play(replay, client_frames(V2_RESUME)).splitlines(keepends=True)
    updates = [json.loads(x)["params"]["update"] for x in out if b"session/update" in x]
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds == ["user_message", "agent_message", "compaction_update", "future_kind",
                     "compaction_update", "state_update"]  # fmt: skip
    folded = updates[2]
    assert folded["compactionId"] == "cmp_001"
    assert folded["status"] == "completed"
    assert folded["summary"] == [
        {"type": "text", "text": "## Retained context\n\nThe user is updating ACP."}
    ]
    assert updates[4] == {
        "sessionUpdate": "compaction_update",
        "compactionId": "cmp_002",
        "status": "failed",
        "error": "model unavailable",
    }
    recorded_agent = agent_bytes(V2_RESUME).splitlines(keepends=True)
    kept = [x for x in out if b"cmp_001" not in x]
    assert kept == [x for x in recorded_agent if b"cmp_001" not in x]  # the rest: exact bytes
    assert updates[0]["messageId"] == "msg_user_8f7a1"
    assert replay.notices == 2
    assert replay.folded == 2
    assert not replay.diverged


def test_v1_load_keeps_an_already_materialized_compaction_and_drops_the_notice() -> None:
    replay = engine(V1_LOAD)
    assert play(replay, client_frames(V1_LOAD)) == agent_bytes(V1_LOAD)
    assert replay.notices == 1
    assert replay.folded == 0


def test_session_selection_keeps_connection_frames() -> None:
    from acp_proxy.replay.script import select_session

    frames = recorded(V1_CONVERSATION)
    other = [f._replace(session_id="other") if f.session_id else f for f in frames]
    assert select_session(frames, "sess_1") == frames
    kept = select_session(other, "sess_1")
    protocol = [f.method for f in kept if f.direction != "stderr"]
    assert protocol == ["initialize", "initialize", "_zed.dev/ping"]  # no session: kept


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=20, max_size=20))
def test_output_bytes_do_not_depend_on_when_replay_is_advanced(pauses: list[int]) -> None:
    exchange = V2_WALKTHROUGH
    replay = engine(exchange)
    out, clock = [], 0
    for index, raw in enumerate(client_frames(exchange)):
        for _ in range(pauses[index % len(pauses)]):
            clock += 1
            out.append(replay.advance(clock).out)
        replay.receive(raw, clock)
    replay.client_closed(clock)
    rest, _ = run_until_done(replay, clock)
    assert b"".join(out) + rest == agent_bytes(exchange)


NEVER_ANSWERED = [
    (C2A, line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 1}})),
    (A2C, line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})),
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": "/w", "mcpServers": []}})),
    (A2C, line({"jsonrpc": "2.0", "method": "_vendor/log", "params": {"text": "starting"}})),
]  # fmt: skip


def test_a_request_the_recording_never_answered_stays_unanswered_and_is_no_divergence() -> None:
    replay = engine(NEVER_ANSWERED)
    out = play(replay, client_frames(NEVER_ANSWERED))
    assert out == agent_bytes(NEVER_ANSWERED)  # no synthetic error for session/new
    assert not replay.diverged, replay.notes
    assert replay.unanswered == 1
    assert replay.ending == "the client closed the connection"


def test_a_never_answered_request_stays_unanswered_when_the_client_lingers() -> None:
    replay = engine(NEVER_ANSWERED, Options(timeout_ns=2 * SECOND))
    out = play(replay, client_frames(NEVER_ANSWERED), close=False)
    rest, _ = run_until_done(replay, 0)
    assert out + rest == agent_bytes(NEVER_ANSWERED)
    assert not replay.diverged
    assert replay.ending is not None
    assert replay.ending.startswith("the recording was replayed")


def test_an_early_end_errors_only_the_requests_the_recording_answered() -> None:
    exchange = [*NEVER_ANSWERED, (C2A, NEVER_ANSWERED[0][1].replace(b'"id":0', b'"id":9'))]
    exchange.append((A2C, line({"jsonrpc": "2.0", "id": 9, "result": {"protocolVersion": 1}})))
    replay = engine(exchange)
    frames = client_frames(exchange)
    play(replay, frames[:2], close=False)
    replay.stop("ended by SIGTERM")
    assert replay.advance(0).out == b""  # session/new: never answered, so not errored either
    assert replay.diverged  # it stopped before the recording's end
    assert replay.unanswered == 1


def test_the_summary_says_why_it_ended_once() -> None:
    from acp_proxy.replay.report import summary

    frames = client_frames(V1_CONVERSATION)
    frames[2] = frames[2].replace(b'"hi"', b'"bye"')
    replay = engine(V1_CONVERSATION)
    play(replay, frames[:3], close=False)
    text = summary(replay, "connection 1")
    assert replay.ending is not None
    assert text.count(replay.ending) == 1
    assert "Ended (recorded seq 6): mismatch: no recorded request matches" in text

    early = engine(V1_CONVERSATION)
    play(early, client_frames(V1_CONVERSATION)[:2])
    text = summary(early, "connection 1")
    assert early.ending is not None
    assert text.count("before sending") == 1
    assert text.endswith("Diverged from the recording.")

    quiet = engine(NEVER_ANSWERED)
    play(quiet, client_frames(NEVER_ANSWERED))
    text = summary(quiet, "connection 2")
    assert "left 1 request unanswered, as the recording never answered them" in text
    assert text.endswith("No divergence.")
