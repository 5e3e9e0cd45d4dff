"""The upstream agent's endpoint: its URL, the HTTP client and WebSocket connections to it.

Rules:
- ``--upstream`` is an ``http``/``https`` URL (``ws``/``wss`` are taken as the same endpoint:
  both profiles are served on one path). Its path is the endpoint the listener serves.
- One httpx client for every connection: no request timeout (event streams live as long as
  their connection), a connect timeout, no connection limit (each open event stream holds an
  HTTP/1.1 connection), no redirects followed (a redirect is the client's to follow), no proxy
  from the environment (the upstream is addressed directly), and none of httpx's default
  headers: the client's end-to-end headers are forwarded and nothing is added but ``Host`` and
  ``Content-Length``. HTTP/2 is used where TLS negotiates it; cleartext upstreams get HTTP/1.1.
- ``https``/``wss`` upstreams are verified against the system's CAs, or against ``ca_file``
  (``--upstream-ca``) for a private CA. Verification is never turned off.
- WebSocket connections carry no keepalive pings of the proxy's own, no ``User-Agent`` of its
  own, and take messages up to ``max_message`` bytes.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

CONNECT_SECONDS = 10.0


class BadUpstream(ValueError):
    """``--upstream`` is not a URL the proxy can forward to."""


@dataclass(frozen=True)
class Endpoint:
    """The upstream URL split into what the proxy needs."""

    url: str  # http(s)://host[:port]/path
    origin: str  # http(s)://host[:port]
    path: str
    secure: bool

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        parts = urlsplit(text)
        scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
        if scheme not in ("http", "https") or not parts.hostname:
            raise BadUpstream(f"--upstream must be an http(s) or ws(s) URL, not {text!r}")
        if parts.query or parts.fragment:
            raise BadUpstream(f"--upstream takes no query or fragment: {text!r}")
        try:
            _ = parts.port
        except ValueError as error:
            raise BadUpstream(f"--upstream has a bad port: {text!r}") from error
        path = parts.path or "/"
        origin = urlunsplit((scheme, parts.netloc, "", "", ""))
        return cls(origin + path, origin, path, scheme == "https")

    def http_url(self, target: str) -> str:
        return self.origin + target

    def ws_url(self, target: str) -> str:
        return ("wss" if self.secure else "ws") + self.origin[self.origin.index(":") :] + target


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """A verifying client context: the system's CAs, or only ``ca_file``'s."""
    context = ssl.create_default_context(cafile=ca_file)
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context


class Upstream:
    """Connections to the upstream endpoint."""

    def __init__(
        self, endpoint: Endpoint, ca_file: str | None = None, max_message: int = 0
    ) -> None:
        self.endpoint = endpoint
        self._tls = tls_context(ca_file) if endpoint.secure else None
        self._ws_tls = ssl.create_default_context(cafile=ca_file) if endpoint.secure else None
        self.max_message = max_message
        self.client = httpx.AsyncClient(
            http2=endpoint.secure,
            verify=self._tls if self._tls is not None else True,
            timeout=httpx.Timeout(None, connect=CONNECT_SECONDS),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
            follow_redirects=False,
            trust_env=False,
        )
        self.client.headers.clear()

    async def send(
        self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> httpx.Response:
        """Send a request; the answer's body is left to be streamed (``aiter_raw``)."""
        request = self.client.build_request(
            method, self.endpoint.http_url(target), headers=headers, content=body or None
        )
        return await self.client.send(request, stream=True)

    async def websocket(
        self, target: str, headers: list[tuple[bytes, bytes]], subprotocols: list[str]
    ) -> ClientConnection:
        from websockets.asyncio.client import connect
        from websockets.typing import Subprotocol

        extra: list[tuple[str, str]] = [
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in headers
        ]
        options: dict[str, Any] = {}
        if self._ws_tls is not None:
            options["ssl"] = self._ws_tls
        return await connect(
            self.endpoint.ws_url(target),
            additional_headers=extra,
            subprotocols=[Subprotocol(p) for p in subprotocols] or None,
            user_agent_header=None,
            ping_interval=None,
            max_size=self.max_message or None,
            open_timeout=CONNECT_SECONDS,
            compression=None,
            proxy=None,
            **options,
        )

    async def aclose(self) -> None:
        await self.client.aclose()
