"""Where ``replay --listen`` listens: ``HOST:PORT`` read, bound, and said.

Rules:
- ``HOST:PORT``, ``[IPv6]:PORT`` or ``:PORT`` (loopback); port 0 picks a free one. A value
  that is not that is a usage error (``AddressError``), and so is an address that cannot be
  bound (in use, not this machine's).
- Loopback unless told otherwise: any other address is bound as asked, with a warning, since
  whoever reaches it can talk to what is served.
- The address is said as the URL of the endpoint, ``http://HOST:PORT/acp``, with the port
  actually bound.
"""

from __future__ import annotations

import ipaddress
import socket

ENDPOINT = "/acp"
BACKLOG = 512


class AddressError(ValueError):
    """A listening address that cannot be used (a usage error)."""


def parse_listen(text: str) -> tuple[str, int]:
    host, colon, port_text = text.rpartition(":")
    if not colon or not port_text.isdigit() or int(port_text) > 65535:
        raise AddressError(f"--listen {text!r}: give it as HOST:PORT (PORT 0 picks a free one)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "127.0.0.1", int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as error:
        raise AddressError(f"--listen {host}:{port}: {error.strerror or error}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        raise AddressError(f"--listen {host}:{port}: {error.strerror or error}") from None
    sock.set_inheritable(True)
    return sock


def endpoint_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{ENDPOINT}"
