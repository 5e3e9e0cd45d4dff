"""A fast remote ACP agent for bench_remote.py: Streamable HTTP and WebSocket on hypercorn.

    python -m tests.perf.remote_server PORT

A raw ASGI app (no SDK: the benchmark measures the proxy, so the agent must be cheap):

- ``POST`` ``initialize`` gets its answer in the body (200, ``Acp-Connection-Id``); any other
  POST gets 202, and its answer comes on the connection's event stream (``GET``), as the
  transport says for requests that are not session-scoped.
- A request ``{"method": "bench/ping"}`` is answered at once; ``{"method": "bench/stream",
  "params": {"count": N, "size": S}}`` gets N ``session/update`` notifications of S bytes of
  text each, then its answer.
- A WebSocket carries the same requests and answers, one text message each.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid
from typing import Any

Scope = dict[str, Any]

_streams: dict[str, asyncio.Queue[bytes | None]] = {}


def _answers(request: dict[str, Any]) -> list[bytes]:
    method = request.get("method")
    rpc_id = request.get("id")
    if method == "bench/stream":
        params = request.get("params") or {}
        count, size = int(params.get("count", 0)), int(params.get("size", 100))
        update = json.dumps({
            "jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "bench", "update": {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": "x" * size}}},
        }).encode()  # fmt: skip
        done = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": {"stopReason": "end_turn"}})
        return [*([update] * count), done.encode()]
    return [json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": {}}).encode()]


async def _body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


async def app(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] == "websocket":
        await _websocket(receive, send)
        return
    if scope["type"] != "http":
        return
    headers = {k.lower(): v for k, v in scope["headers"]}
    connection = headers.get(b"acp-connection-id", b"").decode()
    if scope["method"] == "POST":
        request = json.loads(await _body(receive))
        if request.get("method") == "initialize":
            connection = uuid.uuid4().hex
            _streams[connection] = asyncio.Queue()
            answer = json.dumps({"jsonrpc": "2.0", "id": request.get("id"),
                                 "result": {"protocolVersion": 1}}).encode()  # fmt: skip
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"),
                (b"acp-connection-id", connection.encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": answer})
            return
        queue = _streams.get(connection)
        await send({"type": "http.response.start", "status": 202 if queue else 404,
                    "headers": []})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})
        if queue is not None:
            for answer in _answers(request):
                queue.put_nowait(answer)
        return
    if scope["method"] == "GET":
        queue = _streams.get(connection)
        if queue is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        while True:
            item = await queue.get()
            if item is None:
                break
            batch = [b"data: " + item + b"\n\n"]
            while not queue.empty() and len(batch) < 256:
                more = queue.get_nowait()
                if more is None:
                    break
                batch.append(b"data: " + more + b"\n\n")
            await send({"type": "http.response.body", "body": b"".join(batch), "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    queue = _streams.pop(connection, None)
    if queue is not None:
        queue.put_nowait(None)
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _websocket(receive: Any, send: Any) -> None:
    await receive()  # websocket.connect
    await send({"type": "websocket.accept", "headers": [
        (b"acp-connection-id", uuid.uuid4().hex.encode())]})  # fmt: skip
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return
        for answer in _answers(json.loads(message["text"])):
            await send({"type": "websocket.send", "text": answer.decode()})


async def main() -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{int(sys.argv[1])}"]
    config.accesslog = None
    config.errorlog = None
    config.backlog = 1024
    config.keep_alive_timeout = 600  # the benchmark's connections wait between phases
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(main())
