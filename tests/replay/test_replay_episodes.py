"""Episode following (replay_episodes.py), the value map (replay_values.py) and going live
(replay_live.py): sans-I/O, driven frame by frame.

The conversations: ``episode(prompt, session, reply)`` is initialize, session/new (the agent
mints ``session``), one prompt answered with one chunk ``reply``; with ``permission`` the agent
asks for permission (its request id ``permission``) before replying.
"""

from __future__ import annotations

import json
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.replay.engine import Options
from acp_proxy.replay.episodes import Episodes, follow, frames_of
from acp_proxy.replay.live import Live
from acp_proxy.replay.match import Matcher
from acp_proxy.replay.script import Script, build
from acp_proxy.replay.values import ValueMap
from tests.support.helpers import A2C, C2A, line
from tests.support.replay_helpers import recorded

Exchange = list[tuple[Direction, bytes]]


def init(rpc_id: int = 0) -> bytes:
    params = {"protocolVersion": 1, "clientCapabilities": {}}
    return line({"jsonrpc": "2.0", "id": rpc_id, "method": "initialize", "params": params})


def new_session(rpc_id: int = 1) -> bytes:
    params = {"cwd": "/w", "mcpServers": []}
    return line({"jsonrpc": "2.0", "id": rpc_id, "method": "session/new", "params": params})


def prompt(text: str, session: str, rpc_id: int = 2) -> bytes:
    params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    return line({"jsonrpc": "2.0", "id": rpc_id, "method": "session/prompt", "params": params})


def chunk(session: str, text: str) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    params = {"sessionId": session, "update": update}
    return line({"jsonrpc": "2.0", "method": "session/update", "params": params})


def result(rpc_id: int, value: dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "id": rpc_id, "result": value})


def ask(session: str, rpc_id: int) -> bytes:
    call = {"toolCallId": f"call-{session}", "title": "look", "kind": "read"}
    params = {"sessionId": session, "toolCall": call, "options": []}
    return line(
        {"jsonrpc": "2.0", "id": rpc_id, "method": "session/request_permission", "params": params}
    )


def episode(text: str, session: str, reply: str, permission: int | None = None) -> Exchange:
    frames: Exchange = [
        (C2A, init()),
        (A2C, result(0, {"protocolVersion": 1, "agentCapabilities": {}})),
        (C2A, new_session()),
        (A2C, result(1, {"sessionId": session})),
        (C2A, prompt(text, session)),
    ]
    if permission is not None:
        frames += [
            (A2C, ask(session, permission)),
            (C2A, result(permission, {"outcome": {"outcome": "selected", "optionId": "ok"}})),
        ]
    return [*frames, (A2C, chunk(session, reply)), (A2C, result(2, {"stopReason": "end_turn"}))]


def script(exchange: Exchange) -> Script:
    return build(recorded(exchange), Matcher())


def engine(*episodes: Exchange, live: bool = False) -> Episodes:
    return Episodes([script(e) for e in episodes], Matcher(), Options(), 0, live=live)


def talk(engine: Episodes, frames: list[bytes]) -> list[Any]:
    """A client that reads whatever is due, then sends its next frame; returns what it got."""
    out = [engine.advance(0).out]
    for raw in frames:
        engine.receive(raw, 0)
        out.append(engine.advance(0).out)
    return [json.loads(f) for f in frames_of(b"".join(out))]


HI = episode("hi", "s-first", "Hello")
BYE = episode("bye", "s-second", "Goodbye")


# --- the value map -------------------------------------------------------------------------


def test_values_pair_minted_ids_and_agent_request_ids_both_ways() -> None:
    values = ValueMap()
    assert values.to_peer_bytes(prompt("hi", "told")) == prompt("hi", "told")  # nothing known
    assert values.learn(json.loads(ask("told", 7)), json.loads(ask("peer", 9)))
    assert json.loads(values.to_peer_bytes(prompt("hi", "told")))["params"]["sessionId"] == "peer"
    answer = json.loads(values.to_peer_bytes(result(7, {"outcome": {}})))
    assert answer["id"] == 9  # the client's answer goes to the peer's request
    told = json.loads(values.to_told_bytes(ask("peer", 9)))
    assert told["id"] == 7
    assert told["params"]["toolCall"]["toolCallId"] == "call-told"
    assert json.loads(values.to_told_bytes(result(3, {})))["id"] == 3  # client ids stay
    unknown = chunk("only-the-peer-knows", "x")
    assert values.to_told_bytes(unknown) == unknown  # unchanged bytes when nothing maps


def test_values_stay_a_bijection() -> None:
    values = ValueMap()
    assert values.learn({"sessionId": "a"}, {"sessionId": "x"})
    assert not values.learn({"sessionId": "a"}, {"sessionId": "y"})  # a is x already
    assert not values.learn({"sessionId": "b"}, {"sessionId": "x"})  # x is a's already
    assert values.learn({"sessionId": "a"}, {"sessionId": "x"})
    assert values.values == {"a": "x"}
    assert values.to_peer_bytes(b"not json\n") == b"not json\n"


# --- following episodes --------------------------------------------------------------------


def test_the_first_episode_replays_as_recorded() -> None:
    got = talk(engine(HI, BYE), [init(), new_session(), prompt("hi", "s-first")])
    assert got[1]["result"]["sessionId"] == "s-first"
    assert got[2]["params"]["update"]["content"]["text"] == "Hello"


def test_a_frame_the_episode_lacks_switches_to_the_episode_that_has_it() -> None:
    replay = engine(HI, BYE)
    got = talk(replay, [init(), new_session(), prompt("bye", "s-first")])
    assert replay.path == [1, 2]
    assert not replay.diverged
    # The client was told s-first; episode 2 recorded s-second: the client keeps its value.
    assert got[2] == json.loads(chunk("s-first", "Goodbye"))
    assert got[3] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}


def test_agent_requests_are_mapped_after_a_switch() -> None:
    first = episode("hi", "s-a", "Hello", permission=0)
    second = episode("bye", "s-b", "Goodbye", permission=5)
    replay = engine(first, second)
    got = talk(replay, [init(), new_session(), prompt("bye", "s-a")])
    assert got[2]["id"] == 5  # a request the client was never told of keeps its id
    assert got[2]["params"]["sessionId"] == "s-a"  # in the session the client knows
    assert got[2]["params"]["toolCall"]["toolCallId"] == "call-s-b"  # minted after the switch
    answer = result(5, {"outcome": {"outcome": "selected", "optionId": "ok"}})
    got += talk(replay, [answer])
    assert got[3] == json.loads(chunk("s-a", "Goodbye"))
    assert not replay.diverged


def test_an_episode_that_told_the_client_something_else_is_not_followed() -> None:
    other = episode("bye", "s-second", "Goodbye")
    other[1] = (A2C, result(0, {"protocolVersion": 1, "agentCapabilities": {"x": True}}))
    replay = engine(HI, other)
    got = talk(replay, [init(), new_session(), prompt("bye", "s-first")])
    assert replay.path == [1]
    assert replay.diverged
    assert got[-1]["error"]["data"]["replay"] == "mismatch"


def test_follow_checks_the_whole_log() -> None:
    log = [
        ("c2a", init()),
        ("a2c", result(0, {"protocolVersion": 1, "agentCapabilities": {}})),
        ("c2a", new_session()),
        ("a2c", result(1, {"sessionId": "told"})),
        ("c2a", prompt("bye", "told")),
    ]
    found = follow(script(BYE), Matcher(), Options(), log, 0)
    assert found is not None
    assert found[1].values == {"told": "s-second"}
    assert follow(script(HI), Matcher(), Options(), log, 0) is None  # HI has no "bye"
    log[1] = ("a2c", result(0, {"protocolVersion": 2, "agentCapabilities": {}}))
    assert follow(script(BYE), Matcher(), Options(), log, 0) is None


# --- going live ----------------------------------------------------------------------------


def test_a_new_conversation_goes_live_and_the_agent_is_caught_up() -> None:
    replay = engine(HI, live=True)
    got = talk(replay, [init(), new_session(), prompt("new", "s-first")])
    assert len(got) == 2  # the new prompt is held for the live agent
    assert replay.wants_agent
    assert replay.went_live_after == 2
    sent = replay.to_agent()
    assert sent == init()  # catch-up: the client's frames, one exchange at a time
    replay.agent_frame(result(0, {"protocolVersion": 1, "agentCapabilities": {}}), 0)
    assert replay.to_agent() == new_session()
    replay.agent_frame(result(1, {"sessionId": "live-7"}), 0)
    assert json.loads(replay.to_agent()) == json.loads(prompt("new", "live-7"))
    replay.agent_frame(chunk("live-7", "Fresh"), 0)
    replay.agent_frame(result(2, {"stopReason": "end_turn"}), 0)
    got = [json.loads(f) for f in frames_of(replay.advance(0).out)]
    assert got[0] == json.loads(chunk("s-first", "Fresh"))  # live values made told
    replay.client_closed(0)
    assert replay.close_agent
    replay.agent_closed()
    assert replay.advance(0).done
    assert not replay.diverged


def test_an_agent_that_does_not_reproduce_the_prefix_fails_the_catch_up() -> None:
    replay = engine(HI, live=True)
    talk(replay, [init(), new_session(), prompt("new", "s-first")])
    replay.to_agent()
    replay.agent_frame(result(0, {"protocolVersion": 2, "agentCapabilities": {}}), 0)
    step = replay.advance(0)
    assert step.done
    assert replay.diverged
    assert replay.live is not None
    assert replay.live.failure is not None
    assert "differs at $.result.protocolVersion" in replay.live.failure
    errors = [json.loads(f) for f in frames_of(step.out)]
    assert [e["id"] for e in errors] == [2]  # the held prompt is answered with an error


def permission_log() -> list[tuple[str, bytes]]:
    """A conversation in which the agent asked the client (request id 4) and was answered."""
    return [
        ("c2a", new_session()),
        ("a2c", result(1, {"sessionId": "told"})),
        ("c2a", prompt("hi", "told")),
        ("a2c", ask("told", 4)),
        ("c2a", result(4, {"outcome": {"outcome": "selected", "optionId": "ok"}})),
    ]


def test_catch_up_answers_the_agents_requests_with_the_clients_answers() -> None:
    live = Live(permission_log(), [prompt("more", "told", rpc_id=3)], 0)
    assert live.to_agent() == new_session()
    live.agent_frame(result(1, {"sessionId": "s-live"}), 0)
    assert json.loads(live.to_agent())["params"]["sessionId"] == "s-live"
    live.agent_frame(ask("s-live", 11), 0)  # the live agent's own request id
    sent = [json.loads(f) for f in frames_of(live.to_agent())]
    assert sent[0]["id"] == 11  # the client's answer, to the live request
    assert sent[1]["params"]["sessionId"] == "s-live"  # the held frame, relayed
    assert live.caught_up
    assert live.relayed == 1


def test_catch_up_times_out() -> None:
    live = Live([("c2a", init()), ("a2c", result(0, {}))], [], 0)
    live.to_agent()
    assert live.tick(5, 10) == 10
    assert live.tick(10, 10) is None
    assert live.failure is not None
    assert "timed out after" in live.failure


def test_placeholders_are_bound_to_the_clients_text_after_a_switch() -> None:
    first = episode("hi [redacted:user:1]", "s-a", "Hello [redacted:user:1]")
    second = episode("bye [redacted:user:1]", "s-b", "Goodbye [redacted:user:1]")
    replay = engine(first, second)
    got = talk(replay, [init(), new_session(), prompt("bye alice", "s-a")])
    assert replay.path == [1, 2]
    assert got[2] == json.loads(chunk("s-a", "Goodbye alice"))


def test_a_conversation_new_from_its_first_frame_goes_live_at_once() -> None:
    replay = engine(HI, live=True)
    other = line({"jsonrpc": "2.0", "id": 0, "method": "_vendor/hello", "params": {}})
    assert talk(replay, [other]) == []
    assert replay.went_live_after == 0
    assert replay.to_agent() == other  # nothing to catch up: relayed as it is
    replay.agent_frame(result(0, {}), 0)
    assert replay.advance(0).out == result(0, {})


def test_a_different_answer_to_an_agent_request_is_a_new_conversation() -> None:
    replay = engine(episode("hi", "s-a", "Hello", permission=0), live=True)
    talk(replay, [init(), new_session(), prompt("hi", "s-a")])
    assert replay.live is None
    talk(replay, [result(0, {"outcome": {"outcome": "cancelled"}})])  # recorded: selected
    assert replay.live is not None
    assert replay.went_live_after == 3


def test_a_switch_works_with_the_recorded_timing() -> None:
    options = Options(scale=1.0)
    replay = Episodes([script(HI), script(BYE)], Matcher(), options, 0)
    out = []
    now = 0
    for raw in [init(), new_session(), prompt("bye", "s-first")]:
        now += 10**9  # long after every recorded gap
        out.append(replay.advance(now).out)
        replay.receive(raw, now)
    now += 10**9
    out.append(replay.advance(now).out)
    assert replay.path == [1, 2]
    got = [json.loads(f) for f in frames_of(b"".join(out))]
    assert got[-2] == json.loads(chunk("s-first", "Goodbye"))


def test_the_prefix_tree_is_walked_branch_by_branch() -> None:
    # Episode 3 repeats episode 2's conversation (with its own session id), then goes on.
    longer = episode("bye", "s-third", "Goodbye")
    longer += [
        (C2A, prompt("again", "s-third", rpc_id=3)),
        (A2C, chunk("s-third", "Once more")),
        (A2C, result(3, {"stopReason": "end_turn"})),
    ]
    replay = engine(HI, BYE, longer)
    got = talk(replay, [init(), new_session(), prompt("bye", "s-first")])
    assert replay.path == [1, 2]
    got += talk(replay, [prompt("again", "s-first", rpc_id=3)])
    assert replay.path == [1, 2, 3]
    assert not replay.diverged
    assert got[-2] == json.loads(chunk("s-first", "Once more"))
    assert got[-1] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}


def test_a_live_request_never_reuses_an_id_the_client_knows() -> None:
    live = Live(permission_log(), [], 0)  # the client knows agent request id 4
    live.to_agent()
    live.agent_frame(result(1, {"sessionId": "s-live"}), 0)
    live.to_agent()
    live.agent_frame(ask("s-live", 11), 0)  # caught up: 11 stands for the told 4
    live.to_agent()
    assert live.caught_up
    # After going live the agent asks again, with its own id 4: not the client's 4.
    live.agent_frame(ask("s-live", 4), 0)
    live.agent_frame(ask("s-live", 12), 0)  # an id the client has never seen passes as it is
    told = [json.loads(f) for f in frames_of(live.to_client())]
    assert told[0]["id"] == 5  # fresh: above every id the client knows
    assert told[0]["params"]["sessionId"] == "told"
    assert told[1]["id"] == 12
    live.client_frame(result(5, {"outcome": {"outcome": "cancelled"}}))
    live.client_frame(result(12, {"outcome": {"outcome": "cancelled"}}))
    back = [json.loads(f) for f in frames_of(live.to_agent())]
    assert [frame["id"] for frame in back] == [4, 12]  # each answer to the agent's own id
