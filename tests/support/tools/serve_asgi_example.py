"""Serve the ASGI ``app`` of an example file (the Python SDK's http_server.py) on a port.

usage: serve_asgi_example.py EXAMPLE.py PORT

The example's own ``main()`` binds localhost:8000; this serves the same ``app`` with the same
hypercorn settings (HTTP/2 enabled) on 127.0.0.1:PORT instead, until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import runpy
import signal
import sys


async def _serve(app: object, port: int) -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]


def main() -> None:
    example, port = sys.argv[1], int(sys.argv[2])
    app = runpy.run_path(example, run_name="example")["app"]
    asyncio.run(_serve(app, port))


if __name__ == "__main__":
    main()
