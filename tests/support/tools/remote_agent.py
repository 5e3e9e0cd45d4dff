"""A fake remote ACP agent, cheap and fast: Streamable HTTP and WebSocket on hypercorn.

usage: remote_agent.py PORT [--log FILE] [--flood EVENTS [EVENT_BYTES]]

The one fake remote agent of the tests and of bench_remote.py (no SDK: a benchmark measures the
proxy, and a fault test needs an agent that can outrun any client). A raw ASGI app:

- ``POST`` ``initialize`` gets 200, its answer in the body and a new ``Acp-Connection-Id``;
  any other POST gets 202 (404 for a connection it does not know), and its answers come on
  the connection's event stream (``GET``), as the transport says for requests that are not
  session-scoped. ``{"method": "bench/ping"}`` is answered at once; ``{"method":
  "bench/stream", "params": {"count": N, "size": S}}`` gets N ``session/update``
  notifications of S bytes of text each, then its answer. ``DELETE`` ends the connection
  (202).
- ``--flood EVENTS [EVENT_BYTES]``: a ``GET`` instead gets EVENTS ``session/update``
  notifications of about EVENT_BYTES each (1000 unless told), written as fast as the
  connection takes them, then the stream ends. No real agent does this: it exists to outrun
  a client.
- ``--log FILE``: every request is written to FILE as one line (method and connection id),
  so a test can see what reached the upstream.
- A WebSocket carries the same requests and answers, one text message each.
- Idle connections are kept long (the benchmark's wait between its phases).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import uuid
from typing import Any

Scope = dict[str, Any]

_streams: dict[str, asyncio.Queue[bytes | None]] = {}
_options = argparse.Namespace(log=None, flood=None)


def _log(method: str, connection: str) -> None:
    if _options.log is not None:
        with open(_options.log, "a", encoding="utf-8") as file:
            print(method, connection or "-", file=file)


def _update(text: str, **extra: Any) -> bytes:
    return json.dumps({
        "jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": "bench", **extra, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}},
    }).encode()  # fmt: skip


def _answers(request: dict[str, Any]) -> list[bytes]:
    method = request.get("method")
    rpc_id = request.get("id")
    if method == "bench/stream":
        params = request.get("params") or {}
        count, size = int(params.get("count", 0)), int(params.get("size", 100))
        done = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": {"stopReason": "end_turn"}})
        return [*([_update("x" * size)] * count), done.encode()]
    return [json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": {}}).encode()]


async def _body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


async def _status(send: Any, status: int, headers: list[tuple[bytes, bytes]] | None = None,
                  body: bytes = b"") -> None:  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": body})


async def app(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] == "websocket":
        await _websocket(receive, send)
        return
    if scope["type"] != "http":
        return
    headers = {k.lower(): v for k, v in scope["headers"]}
    connection = headers.get(b"acp-connection-id", b"").decode()
    method = scope["method"]
    body = await _body(receive)
    _log(method, connection)
    if method == "POST":
        request = json.loads(body)
        if request.get("method") == "initialize":
            connection = uuid.uuid4().hex
            _streams[connection] = asyncio.Queue()
            answer = json.dumps({"jsonrpc": "2.0", "id": request.get("id"),
                                 "result": {"protocolVersion": 1}}).encode()  # fmt: skip
            headers_out = [(b"content-type", b"application/json"),
                           (b"acp-connection-id", connection.encode())]  # fmt: skip
            await _status(send, 200, headers_out, answer)
            return
        queue = _streams.get(connection)
        await _status(send, 202 if queue is not None or _options.flood else 404)
        if queue is not None:
            for answer in _answers(request):
                queue.put_nowait(answer)
        return
    if method == "GET":
        if _options.flood:
            await _flood(receive, send)
            return
        queue = _streams.get(connection)
        if queue is None:
            await _status(send, 404)
            return
        await _event_stream(queue, send)
        return
    queue = _streams.pop(connection, None)
    if queue is not None:
        queue.put_nowait(None)
    await _status(send, 202)


async def _event_stream(queue: asyncio.Queue[bytes | None], send: Any) -> None:
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
                queue.put_nowait(None)
                break
            batch.append(b"data: " + more + b"\n\n")
        await send({"type": "http.response.body", "body": b"".join(batch), "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _flood(receive: Any, send: Any) -> None:
    events, size = _options.flood[0], (_options.flood[1:] or [1000])[0]
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
    gone = asyncio.ensure_future(receive())  # http.disconnect, once the reader has gone
    pad = "x" * size
    for n in range(events):
        if gone.done():
            return
        if n % 64 == 0:
            await asyncio.sleep(0)  # a send that never waits never lets the loop look
        data = b"data: " + _update(pad, n=n) + b"\n\n"
        await send({"type": "http.response.body", "body": data, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
    gone.cancel()


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

    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--log")
    parser.add_argument("--flood", type=int, nargs="+", metavar="N")
    parser.parse_args(namespace=_options)
    config = Config()
    config.bind = [f"127.0.0.1:{_options.port}"]
    config.accesslog = None
    config.errorlog = None
    config.backlog = 1024
    config.keep_alive_timeout = 600
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(main())
