"""Remote ACP (Streamable HTTP and WebSocket): the reverse proxy ``record --listen``, the stdio
bridge ``record --connect`` and the replay listener ``replay --listen``.

Rules:
- This package is the async side of recording remote agents: it serves with hypercorn (ASGI:
  HTTP/1.1, h2c and the WebSocket upgrade in one server), connects upstream with aiohttp (HTTP)
  or httpx (the bridge) and websockets (WS), and records through ``record/hub.py`` (the same
  observer, store and loss accounting as stdio). ``record/`` never imports this package nor
  asyncio. Why these libraries: docs/design.md, "Remote agents".
- Its libraries are the optional ``remote`` extra: ``missing_extra`` gives the one line to say
  when they are not installed (exit 2), before anything else is done.
"""

from __future__ import annotations

import importlib.util

# record --listen forwards with aiohttp; record --connect speaks to its agent with httpx (h2).
EXTRA_MODULES = ("hypercorn", "aiohttp", "httpx", "h2", "websockets")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken or shadowed install is a missing one
        return False


def missing_extra() -> str | None:
    """The one-line message when the ``remote`` extra is not installed, else None."""
    missing = [name for name in EXTRA_MODULES if not _importable(name)]
    if not missing:
        return None
    return (
        f"remote transports need the remote extra ({', '.join(missing)} missing): "
        "pip install 'acp-proxy[remote]'"
    )
