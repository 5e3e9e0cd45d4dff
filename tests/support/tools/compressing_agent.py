"""A remote agent whose answers and event stream are compressed: aiohttp's own compression.

usage: compressing_agent.py PORT CODING [EVENTS] [--bomb BYTES]

CODING is ``gzip`` or ``deflate`` (aiohttp compresses: a real server's bytes) or ``br``
(aiohttp does not compress br: the body is compressed here with the brotli module).

- ``POST`` ``initialize`` gets 200, its JSON-RPC answer compressed, and an
  ``Acp-Connection-Id``; with ``--bomb BYTES`` the answer is padded with BYTES of JSON
  whitespace before it is compressed (a decompression bomb: a small body that decodes huge).
- ``GET`` gets an event stream of EVENTS ``session/update`` notifications (100 unless told),
  compressed as one body, written event by event; then it ends.
- ``DELETE`` gets 202.
"""

from __future__ import annotations

import argparse
import json
import zlib
from typing import Any

from aiohttp import web

options = argparse.Namespace()


def _event(n: int) -> bytes:
    message = {"jsonrpc": "2.0", "method": "session/update",
               "params": {"sessionId": "s", "n": n, "update": {"text": "é" * (n % 7)}}}  # fmt: skip
    return b"data: " + json.dumps(message, ensure_ascii=False).encode() + b"\n\n"


def _compressed(body: bytes) -> bytes:
    if options.coding == "br":
        import brotli  # type: ignore[import-untyped]

        return bytes(brotli.compress(body))
    wbits = zlib.MAX_WBITS | 16 if options.coding == "gzip" else zlib.MAX_WBITS
    packer = zlib.compressobj(wbits=wbits)
    return packer.compress(body) + packer.flush()


async def endpoint(request: web.Request) -> web.StreamResponse:
    if request.method == "POST":
        message: dict[str, Any] = await request.json()
        answer = json.dumps({"jsonrpc": "2.0", "id": message.get("id"),
                             "result": {"protocolVersion": 1}}).encode()  # fmt: skip
        headers = {"acp-connection-id": "c0ffee", "content-type": "application/json"}
        if options.bomb or options.coding == "br":
            body = _compressed(b" " * options.bomb + answer)
            headers["content-encoding"] = options.coding
            return web.Response(body=body, headers=headers)
        response = web.Response(body=answer, headers=headers)
        response.enable_compression(web.ContentCoding(options.coding))
        return response
    if request.method == "GET":
        stream = web.StreamResponse(headers={"content-type": "text/event-stream"})
        events = [_event(n) for n in range(options.events)]
        if options.coding == "br":
            stream.headers["content-encoding"] = "br"
            await stream.prepare(request)
            await stream.write(_compressed(b"".join(events)))
        else:
            stream.enable_compression(web.ContentCoding(options.coding))
            await stream.prepare(request)
            for event in events:
                await stream.write(event)
        await stream.write_eof()
        return stream
    return web.Response(status=202)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("coding", choices=["gzip", "deflate", "br"])
    parser.add_argument("events", type=int, nargs="?", default=100)
    parser.add_argument("--bomb", type=int, default=0, metavar="BYTES")
    parser.parse_args(namespace=options)
    app = web.Application()
    app.router.add_route("*", "/acp", endpoint)
    web.run_app(app, host="127.0.0.1", port=options.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
