"""The upstream agent's endpoint: its URL, and HTTP and WebSocket connections to it.

Rules:
- ``--upstream`` is an ``http``/``https`` URL (``ws``/``wss`` are taken as the same endpoint:
  both profiles are served on one path). Its path is the endpoint the listener serves.
- HTTP goes through one aiohttp session for every connection (measured: a third of httpx's
  CPU per request, docs/performance.md; HTTP/1.1 to the upstream, TLS where it is https): no
  request timeout (event streams live as long as their connection), a connect timeout, no
  connection limit (each open event stream holds a connection), no redirects followed (a
  redirect is the client's to follow), no proxy from the environment, no cookie jar (cookies
  are the clients', passed through, never kept and mixed between clients), no decompression
  (the answer's bytes are passed on as they came), the target sent exactly as the client asked
  it (no re-quoting), and none of the library's own headers: the client's end-to-end headers
  are forwarded and nothing is added but ``Host`` and ``Content-Length``.
- ``https``/``wss`` upstreams are verified against the system's CAs, or against ``ca_file``
  (``--upstream-ca``) for a private CA. Verification is never turned off.
- WebSocket connections (websockets) carry no keepalive pings of the proxy's own, no
  ``User-Agent`` of its own, no compression towards the upstream, and take messages up to
  ``max_message`` bytes; their messages come a network read at a time
  (remote/upstream_websocket.py).
- Every failure to reach the upstream or to read its answer is ``UpstreamError``.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from yarl import URL

if TYPE_CHECKING:
    from acp_proxy.remote.upstream_websocket import BatchedConnection

CONNECT_SECONDS = 10.0
# An idle connection to the upstream is let go before common servers' own keep-alive ends
# (hypercorn's and node's are 5 s), so a request is never sent on one the server is closing.
IDLE_KEEP_SECONDS = 2.0
# aiohttp adds these unless told not to; the proxy forwards the client's own or none.
_LIBRARY_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


class UpstreamError(Exception):
    """The upstream could not be reached, or its answer could not be read to the end."""


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
    return ssl.create_default_context(cafile=ca_file)


class Answer:
    """The upstream's answer to one request: status and headers now, the body as it comes."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status: int = response.status
        self.raw_headers: list[tuple[bytes, bytes]] = list(response.raw_headers)

    def header(self, name: str) -> str | None:
        return self._response.headers.get(name)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (transfer coding undone, nothing else)."""
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, OSError) as error:
            raise UpstreamError(f"{type(error).__name__}: {error}") from error

    async def close(self) -> None:
        self._response.close()


class Upstream:
    """Connections to the upstream endpoint (make it inside the running event loop)."""

    def __init__(
        self, endpoint: Endpoint, ca_file: str | None = None, max_message: int = 0
    ) -> None:
        self.endpoint = endpoint
        self._tls = tls_context(ca_file) if endpoint.secure else None
        self.max_message = max_message
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=0,
                ssl=self._tls if self._tls else True,
                keepalive_timeout=IDLE_KEEP_SECONDS,
            ),
            timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS),
            auto_decompress=False,
            skip_auto_headers=_LIBRARY_HEADERS,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            requote_redirect_url=False,
        )

    async def send(
        self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> Answer:
        """Send a request; the answer's body is left to be streamed (``Answer.chunks``)."""
        pairs = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers]
        try:
            response = await self._session.request(
                method, URL(self.endpoint.http_url(target), encoded=True), headers=pairs,
                data=body or None, allow_redirects=False, compress=None,
            )  # fmt: skip
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise UpstreamError(f"{type(error).__name__}: {error}") from error
        return Answer(response)

    async def websocket(
        self, target: str, headers: list[tuple[bytes, bytes]], subprotocols: list[str]
    ) -> BatchedConnection:
        from websockets.asyncio.client import connect
        from websockets.typing import Subprotocol

        from acp_proxy.remote.upstream_websocket import BatchedConnection

        extra: list[tuple[str, str]] = [
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in headers
        ]
        options: dict[str, Any] = {}
        if self._tls is not None:
            options["ssl"] = self._tls
        connection = await connect(
            self.endpoint.ws_url(target),
            additional_headers=extra,
            subprotocols=[Subprotocol(p) for p in subprotocols] or None,
            user_agent_header=None,
            ping_interval=None,
            max_size=self.max_message or None,
            open_timeout=CONNECT_SECONDS,
            compression=None,
            proxy=None,
            create_connection=BatchedConnection,
            **options,
        )
        assert isinstance(connection, BatchedConnection)
        return connection

    async def aclose(self) -> None:
        await self._session.close()
