"""Where replay --listen sends each agent message over Streamable HTTP (server_routing.py)."""

from __future__ import annotations

import orjson

from acp_proxy.remote.server_routing import ServerRoutes, answers, session_required


def raw(message: dict[str, object]) -> bytes:
    return orjson.dumps(message)


def test_session_messages_go_to_an_open_session_stream_else_the_connection() -> None:
    routes = ServerRoutes()
    update = raw({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}})
    assert routes.destination(update, set()) is None
    assert routes.destination(update, {"s"}) == "s"
    assert routes.destination(update, {"t"}) is None


def test_an_answer_follows_its_request() -> None:
    routes = ServerRoutes()
    routes.client_message(raw({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                               "params": {"sessionId": "s"}}), None)  # fmt: skip
    routes.client_message(raw({"jsonrpc": "2.0", "id": 3, "method": "x", "params": {}}), "h")
    assert routes.destination(raw({"jsonrpc": "2.0", "id": 2, "result": {}}), {"s", "h"}) == "s"
    assert routes.destination(raw({"jsonrpc": "2.0", "id": 3, "error": {}}), {"s", "h"}) == "h"
    assert routes.destination(raw({"jsonrpc": "2.0", "id": 3, "error": {}}), {"s", "h"}) is None


def test_a_new_session_is_announced_on_the_connection_stream() -> None:
    routes = ServerRoutes()
    routes.client_message(raw({"jsonrpc": "2.0", "id": 1, "method": "session/new"}), None)
    created = raw({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}})
    assert routes.destination(created, {"s"}) is None


def test_peer_bytes_go_to_the_connection_stream() -> None:
    routes = ServerRoutes()
    routes.client_message(b"\xff not json", "s")
    assert routes.destination(b"\xff", {"s"}) is None
    assert routes.destination(b"[]", {"s"}) is None


def test_answers_and_session_scoped_methods() -> None:
    assert answers(raw({"jsonrpc": "2.0", "id": 0, "result": {}}), 0)
    assert not answers(raw({"jsonrpc": "2.0", "id": "0", "result": {}}), 0)
    assert answers(raw({"jsonrpc": "2.0", "id": 0, "error": {"code": 1}}), 0)
    assert not answers(b"junk", 0)
    assert session_required("session/prompt")
    assert not session_required("session/new")
    assert not session_required(None)
