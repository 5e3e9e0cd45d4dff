"""Sans-I/O: which HTTP headers a reverse proxy passes on, and which it may record.

Rules:
- End-to-end headers pass through unchanged, in order, repeated ones kept. Hop-by-hop headers
  (RFC 9110 7.6.1: ``Connection`` and every header it names, ``Keep-Alive``,
  ``Proxy-Connection``, ``TE``, ``Transfer-Encoding``, ``Upgrade``, ``Trailer``) are dropped;
  each hop makes its own. ``Host`` and ``Content-Length`` are set by the client library for
  the next hop (the body is forwarded unchanged, so the length is the same).
- Credentials (``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``, and any
  header whose name says token, secret, key, password, auth or session cookie) are never
  recorded unless the user asks (``--record-credentials``): their value is stored as null, so
  the recording shows they were there (protocol/credentials.py names them).
  ``Acp-Connection-Id`` and ``Acp-Session-Id`` are routing ids, not credentials.
- Names are compared without case; recorded names are lower-cased.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from acp_proxy.protocol.credentials import CREDENTIALS, is_credential

__all__ = [
    "CREDENTIALS", "HOP_BY_HOP", "SET_BY_NEXT_HOP", "WEBSOCKET_HANDSHAKE", "end_to_end",
    "header", "is_credential", "recordable",
]  # fmt: skip

HOP_BY_HOP = frozenset({
    b"connection", b"keep-alive", b"proxy-connection", b"te", b"transfer-encoding",
    b"upgrade", b"trailer",
})  # fmt: skip
SET_BY_NEXT_HOP = frozenset({b"host", b"content-length"})
# WebSocket handshake headers: the client library makes its own for the upstream handshake.
WEBSOCKET_HANDSHAKE = frozenset({
    b"sec-websocket-key", b"sec-websocket-version", b"sec-websocket-extensions",
    b"sec-websocket-accept", b"sec-websocket-protocol",
})  # fmt: skip

Headers = Sequence[tuple[bytes, bytes]]


def _connection_named(headers: Headers) -> set[bytes]:
    named: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(part.strip().lower() for part in value.split(b",") if part.strip())
    return named


def end_to_end(headers: Headers, *, drop: Iterable[bytes] = ()) -> list[tuple[bytes, bytes]]:
    """The headers to pass to the next hop: hop-by-hop ones, those ``Connection`` names and
    ``drop`` left out, the rest unchanged and in order."""
    leave = HOP_BY_HOP | SET_BY_NEXT_HOP | _connection_named(headers) | set(drop)
    return [(name, value) for name, value in headers if name.lower() not in leave]


def recordable(headers: Headers, *, credentials: bool = False) -> list[list[str | None]]:
    """The headers as recorded: ``[name, value]`` pairs, a credential's value null unless
    ``credentials``. Bytes are decoded as Latin-1 (HTTP's own), so nothing is lost."""
    return [
        [
            name.decode("latin-1").lower(),
            value.decode("latin-1") if credentials or not is_credential(name) else None,
        ]
        for name, value in headers
    ]


def header(headers: Headers, wanted: bytes) -> bytes | None:
    """The first value of header ``wanted`` (lower-case name), or None."""
    for name, value in headers:
        if name.lower() == wanted:
            return value
    return None
