"""asgi_tap: serve an ASGI app on a free loopback port with hypercorn, logging what crosses.

Usage: ``python asgi_tap.py LOG FILE.py:ATTRIBUTE``

Loads ATTRIBUTE (an ASGI app) from FILE.py (the Python SDK's ``examples/http_server.py``
defines ``app``), binds 127.0.0.1 on a free port, prints the port on stdout (one line), then
serves HTTP/1.1, h2c and WebSocket with hypercorn until SIGTERM or SIGINT.

Every exchange is appended to LOG as one JSON line, bodies as latin-1 text (byte for byte):
``{"kind": "post_in", "headers": {...}, "body": ...}`` when a POST's body has come and
``{"kind": "post_out", "status": N, "answer": ...}`` when it is answered,
``{"kind": "sse", "headers": {...}, "chunk": ...}`` for each chunk of an event stream,
``{"kind": "ws_in"|"ws_out", "text": ...}`` for each WebSocket text frame, ``{"kind":
"delete", ...}``. A test compares them with what the client side saw.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import signal
import socket
import sys
import threading
from typing import Any

_lock = threading.Lock()


def _log(path: str, record: dict[str, Any]) -> None:
    line = json.dumps(record) + "\n"
    with _lock, open(path, "a", encoding="utf-8") as file:
        file.write(line)


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def tapped(app: Any, path: str) -> Any:
    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await _http(scope, receive, send)
        elif scope["type"] == "websocket":
            await _websocket(scope, receive, send)
        else:
            await app(scope, receive, send)

    async def _http(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers, method = _headers(scope), scope["method"]
        body = bytearray()
        kind = "post_out" if method == "POST" else method.lower()
        record: dict[str, Any] = {"kind": kind, "headers": headers}
        stream = False

        async def logged_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body", False) and method == "POST":
                    _log(path, {"kind": "post_in", "headers": headers,
                                "body": bytes(body).decode("latin-1")})  # fmt: skip
            return message

        answer = bytearray()

        async def logged_send(message: Any) -> None:
            nonlocal stream
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
                out = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in
                       message.get("headers", [])}  # fmt: skip
                record["answer_headers"] = out
                stream = out.get("content-type", "").startswith("text/event-stream")
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                if stream and chunk:
                    _log(path, {"kind": "sse", "headers": headers,
                                "chunk": chunk.decode("latin-1")})  # fmt: skip
                else:
                    answer.extend(chunk)
            await send(message)

        await app(scope, logged_receive, logged_send)
        if not stream:
            record["body"] = bytes(body).decode("latin-1")
            record["answer"] = bytes(answer).decode("latin-1")
            _log(path, record)

    async def _websocket(scope: dict[str, Any], receive: Any, send: Any) -> None:
        _log(path, {"kind": "ws_open", "headers": _headers(scope)})

        async def logged_receive() -> Any:
            message = await receive()
            if message["type"] == "websocket.receive" and message.get("text") is not None:
                _log(path, {"kind": "ws_in", "text": message["text"]})
            return message

        async def logged_send(message: Any) -> None:
            if message["type"] == "websocket.send" and message.get("text") is not None:
                _log(path, {"kind": "ws_out", "text": message["text"]})
            await send(message)

        await app(scope, logged_receive, logged_send)

    return wrapper


def load(target: str) -> Any:
    file, _, attribute = target.rpartition(":")
    spec = importlib.util.spec_from_file_location("tapped_app", file)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attribute)


async def serve(app: Any) -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = None
    sys.stdout.write(f"{sock.getsockname()[1]}\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait)


def main() -> None:
    log, target = sys.argv[1], sys.argv[2]
    asyncio.run(serve(tapped(load(target), log)))


if __name__ == "__main__":
    main()
