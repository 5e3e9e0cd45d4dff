"""Remote ACP (Streamable HTTP and WebSocket): the reverse proxy ``record --listen``, the stdio
bridge ``record --connect`` and the replay listener ``replay --listen``.

Rules:
- This package is the async side of recording remote agents: it serves with hypercorn (ASGI:
  HTTP/1.1, h2c and the WebSocket upgrade in one server), connects upstream with httpx (HTTP)
  and websockets (WS), and records through ``record/hub.py`` (the same observer, store and loss
  accounting as stdio). ``record/`` never imports this package nor asyncio.
- Its libraries are the optional ``remote`` extra: ``missing_extra`` gives the one line to say
  when they are not installed (exit 2), before anything else is done.
"""

from __future__ import annotations

import importlib.util

EXTRA_MODULES = ("hypercorn", "httpx", "h2", "websockets")


def missing_extra() -> str | None:
    """The one-line message when the ``remote`` extra is not installed, else None."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"remote transports need the remote extra ({', '.join(missing)} missing): "
        "pip install 'acp-proxy[remote]'"
    )
