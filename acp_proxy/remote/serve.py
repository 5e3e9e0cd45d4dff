"""``record --listen HOST:PORT --upstream URL``: the listener's life, start to end.

Rules:
- Order: the listening socket is bound first (a port in use is the user's mistake, said
  before anything else happens), then the recorder process is forked (record/hub.py: before
  any thread or event loop; it closes its copy of the socket), then the event loop serves.
- hypercorn serves the socket (``fd://``): HTTP/1.1, h2c (prior knowledge or upgrade) and h2
  over TLS, and WebSocket, with the proxy's ASGI app (proxy.py). It adds no ``Server`` or
  ``Date`` header of its own: the upstream's pass through.
- ``--listen`` is read and bound by remote/listen_address.py (shared with ``replay
  --listen``): loopback unless told otherwise, any other address is warned about once, ``PORT``
  0 picks a free port. The address is said on stderr:
  ``acp-proxy: listening on http://127.0.0.1:PORT/acp`` (``https`` with ``--cert``/``--key``).
- SIGINT, SIGTERM and SIGHUP stop the listener: open requests get ``GRACE_SECONDS`` to end,
  every connection still open is recorded as ``dropped`` (the listener stopped), and the
  recorder gets ``flush_deadline`` seconds to commit, as ``record`` gives its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.record.recording import FLUSH_DEADLINE
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.recorder import SinkFactory

GRACE_SECONDS = 2.0
# An idle kept-alive client connection is kept longer than clients keep theirs in their pools
# (httpx and undici a few seconds, aiohttp 15 s, browsers about a minute), so that the client
# always lets it go first: a server that closes it as the client sends a request on it makes
# that request fail (the client sees the connection reset) although nothing was wrong.
CLIENT_KEEP_ALIVE_SECONDS = 75.0


@dataclass
class ListenOptions:
    listen: str
    upstream: str
    db_path: Path
    label: str | None = None
    check: bool = False
    otlp: dict[str, object] | None = None
    max_recorder_wait: float = 1.0
    upstream_ca: str | None = None
    cert: str | None = None
    key: str | None = None
    record_credentials: bool = False
    idle_timeout: float | None = None  # None: the proxy's default
    client_stall: float | None = None  # None: the proxy's default
    ui: bool = False
    flush_deadline: float = FLUSH_DEADLINE
    sinks: SinkFactory | None = None  # each connection's recorder sinks (cli/sinks.py)


def listen_url(sock: socket.socket, path: str, secure: bool) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if secure else 'http'}://{shown}:{port}{path}"


def run(options: ListenOptions, report: Reporter) -> int:
    """Serve until a signal; the exit status (0, or 1 when the recording failed)."""
    from acp_proxy.record.hub import RecordingHub
    from acp_proxy.remote.listen_address import bind, is_loopback, parse_listen
    from acp_proxy.remote.upstream import Endpoint

    endpoint = Endpoint.parse(options.upstream)
    host, port = parse_listen(options.listen)
    sock = bind(host, port)
    url = listen_url(sock, endpoint.path, options.cert is not None)
    if not is_loopback(host):
        report(
            f"listening on {host}, which is not a loopback address: anyone who can reach it "
            "can talk to the upstream agent through this proxy"
        )
    hub = RecordingHub.start(
        options.db_path, report, check=options.check, otlp=options.otlp, sinks=options.sinks,
        close_in_child=[sock.fileno()],
    )  # fmt: skip
    inspector = None
    if options.ui:
        from acp_proxy.record.session import _start_ui

        inspector = _start_ui(options.db_path, report)
    try:
        asyncio.run(_serve(options, endpoint, sock, url, hub, report))
    finally:
        with contextlib.suppress(OSError):  # hypercorn closes the socket it served
            sock.close()
        outcome = hub.finish(options.flush_deadline)
        if inspector is not None and inspector.poll() is None:
            inspector.terminate()
    return 1 if outcome in ("failed", "died") else 0


async def _serve(
    options: ListenOptions, endpoint: object, sock: socket.socket, url: str, hub: object,
    report: Reporter,
) -> None:  # fmt: skip
    import hypercorn.asyncio
    from hypercorn.config import Config

    from acp_proxy.record.hub import RecordingHub
    from acp_proxy.remote.proxy import MAX_BODY_BYTES, ProxyOptions, ReverseProxy
    from acp_proxy.remote.recording import HubFeeder
    from acp_proxy.remote.upstream import Endpoint, Upstream

    assert isinstance(endpoint, Endpoint)
    assert isinstance(hub, RecordingHub)
    upstream = Upstream(endpoint, options.upstream_ca, max_message=MAX_BODY_BYTES)
    feeder = HubFeeder(hub, options.max_recorder_wait)
    proxy_options = ProxyOptions(
        url, label=options.label, record_credentials=options.record_credentials
    )
    if options.idle_timeout is not None:
        proxy_options.idle_timeout = options.idle_timeout
    if options.client_stall is not None:
        proxy_options.client_stall = options.client_stall
    app = ReverseProxy(upstream, feeder, proxy_options, report)
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.errorlog = None
    config.include_server_header = False
    config.include_date_header = False
    config.graceful_timeout = GRACE_SECONDS
    config.keep_alive_timeout = CLIENT_KEEP_ALIVE_SECONDS
    config.websocket_max_message_size = MAX_BODY_BYTES
    config.h11_max_incomplete_size = 64 * 1024
    config.backlog = 1024
    if options.cert is not None:
        config.certfile = options.cert
        config.keyfile = options.key
    # asyncio's own warnings (a write to a client that has gone) are not ours to print: what
    # matters is said once, in the proxy's words, and recorded.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    report(f"listening on {url}")
    try:
        await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait, mode="asgi")  # type: ignore[arg-type]
    finally:
        app.close_all("the listener stopped with the connection open")
        feeder.stop()
        await upstream.aclose()
