"""A fake remote agent for the fault tests: an event stream as fast as it can, on demand.

usage: flood_server.py PORT LOG [EVENTS [EVENT_BYTES]]

POST ``initialize`` gets 200, a JSON-RPC answer and an ``Acp-Connection-Id``; any other POST
gets 202. GET gets an event stream of EVENTS ``session/update`` notifications of about
EVENT_BYTES each, written as fast as the connection takes them, then the stream ends. DELETE
gets 202. Every request is written to LOG as one line (method and connection id), so a test
can see what reached the upstream. No real agent does this: it exists to outrun a client.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid
from typing import Any

PORT, LOG = int(sys.argv[1]), sys.argv[2]
EVENTS = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
EVENT_BYTES = int(sys.argv[4]) if len(sys.argv) > 4 else 1000


def _log(method: str, headers: dict[bytes, bytes]) -> None:
    with open(LOG, "a", encoding="utf-8") as file:
        print(method, headers.get(b"acp-connection-id", b"-").decode(), file=file)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    headers = {k.lower(): v for k, v in scope["headers"]}
    method = scope["method"]
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    _log(method, headers)
    if method == "POST":
        request = json.loads(body)
        if request.get("method") == "initialize":
            answer = json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                 "result": {"protocolVersion": 1}}).encode()  # fmt: skip
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"),
                (b"acp-connection-id", uuid.uuid4().hex.encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": answer})
            return
    if method == "GET":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        pad = "x" * EVENT_BYTES
        gone = asyncio.ensure_future(receive())  # http.disconnect, once the reader has gone
        for n in range(EVENTS):
            if gone.done():
                return
            if n % 64 == 0:
                await asyncio.sleep(0)  # a send that never waits never lets the loop look
            event = {"jsonrpc": "2.0", "method": "session/update",
                     "params": {"sessionId": "s", "n": n, "pad": pad}}  # fmt: skip
            data = b"data: " + json.dumps(event).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        gone.cancel()
        return
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def main() -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{PORT}"]
    config.accesslog = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(main())
