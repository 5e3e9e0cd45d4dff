"""Running the inspector: bind, say the address on stderr, serve until stopped.

Rules:
- Binds 127.0.0.1 unless a host is given (then a warning: the token is all that guards it).
  Port 0 takes a free port; the address printed is the one really bound.
- The address (with its token) goes to stderr as one ``acp-proxy:`` line, never stdout: beside
  ``record`` stdout is the protocol channel.
- ``watch_pid``: serve only while that process lives (``record --ui`` starts the server as a
  child process and it ends with the recording's proxy).
- uvicorn logs only warnings; no access log (paths carry the token). The address is said once
  the server is ready to answer (its protocol loaded); no websockets are served.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_proxy.stderr import Reporter

LOOPBACK = "127.0.0.1"
WATCH_S = 0.5
SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = LOOPBACK
    port: int = 0
    open_browser: bool = False
    watch_pid: int | None = None


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off only on sockets that say they are TCP, and
    # without that a keep-alive answer written in two parts waits for the peer's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def address(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/{token}/"


def serve(make_app: Callable[[str, int], Any], options: ServeOptions, report: Reporter) -> None:
    """Bind, build the app for the bound port (``make_app(host, port)``), serve until stopped."""
    import sys

    import uvicorn

    # Requests wait for the interpreter after every SQLite call; beside the background checker
    # the default 5 ms hand-over made each of those waits long (a convoy).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        sock = bind(options.host, options.port)
    except OSError as error:
        report(f"cannot listen on {options.host}:{options.port}: {error}")
        raise SystemExit(2) from None
    port = sock.getsockname()[1]
    app, url = make_app(options.host, port)
    if options.host not in (LOOPBACK, "localhost", "::1"):
        report(f"warning: serving on {options.host}, not loopback: anyone who can reach it and "
               "has the token can read every recording in the database")  # fmt: skip
    # No websockets (the page's live stream is server-sent events), so uvicorn imports no
    # websockets protocol; loaded before the address is said, so that the first page's
    # requests wait for nothing of the server's start.
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1,
        http="h11", ws="none",
    )  # fmt: skip
    config.load()
    report(f"ui at {url}")
    server = uvicorn.Server(config)
    if options.open_browser:
        import webbrowser

        with contextlib.suppress(Exception):  # no browser here: the address was said
            webbrowser.open(url)
    if options.watch_pid is not None:
        _watch(server, options.watch_pid)
    server.run(sockets=[sock])


def _watch(server: Any, pid: int) -> None:
    import threading
    import time

    child = os.getppid() == pid  # started by that process: its end re-parents us

    def watch() -> None:
        while not server.should_exit:
            gone = child and os.getppid() != pid
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                gone = True
            except PermissionError:
                pass
            if gone:
                server.should_exit = True
                return
            time.sleep(WATCH_S)

    threading.Thread(target=watch, name="acp-proxy-ui-watch", daemon=True).start()
