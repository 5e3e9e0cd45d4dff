"""The reverse proxy: an ASGI application forwarding ACP's remote transport, recording it.

Rules:
- The endpoint path of ``--upstream`` is served; any other path gets a 404 of the proxy's own
  (nothing else is forwarded or recorded).
- Streamable HTTP: a request without an ``Acp-Connection-Id`` (the ``initialize`` POST) opens
  a recorded connection; the ``Acp-Connection-Id`` of its answer names it, and every later
  request with that id is an exchange of the same recorded connection. An answer that gives no
  id ends that recorded connection (``closed``). A request with an id the proxy does not know
  (another gateway's, or a made-up one) is passed through as the upstream answers it, recorded
  in a connection of its own under that id; an upstream 404 ends it. A ``DELETE`` the upstream
  accepts ends the connection (``closed``).
- Bytes: a request body is read whole (at most ``max_body``: past it the proxy answers 413),
  recorded as one frame, and forwarded unchanged; an answer body is streamed to the client as
  it comes, unchanged (the upstream client does not decode: remote/upstream.py). An event
  stream's events are cut out by protocol/sse.py, each ``data`` one frame, while the chunks
  themselves are forwarded as they are (keepalive comments included). A body with a
  ``Content-Encoding`` (gzip, deflate, br) is forwarded as it came and recorded decoded
  (remote/content_coding.py: bounded pieces, an answer at most ``max_body`` decoded bytes);
  what cannot be decoded within the bounds is not recorded, and counted as lost with why
  (said once per kind on stderr). A WebSocket text message is one frame; binary messages are
  forwarded and recorded too (as frames the observer calls unparseable).
- Headers: end-to-end headers pass both ways unchanged, hop-by-hop ones are handled per hop
  (remote/headers.py). Credentials are recorded as null unless ``record_credentials``.
- A Streamable HTTP connection with no request in flight and no event stream open for
  ``idle_timeout`` seconds (0: never) is taken for one whose client went away without
  ``DELETE``: the proxy records it ``dropped`` with why, says so once on stderr and tells the
  upstream (``DELETE``). A WebSocket connection ends with its socket.
- Each message is recorded before it is forwarded (remote/recording.py): the timeline never
  has an answer before its cause.
- Faults never stop the listener: an unreachable upstream gives the client a 502 whose body
  is one JSON-RPC error line (said once on stderr per outage); a client that goes away ends
  its exchange (recorded with why). A client that reads an event stream or a WebSocket more
  slowly than the upstream sends has at most ``max_buffered`` bytes waiting for it: past that
  the proxy reads no more from the upstream until the client has taken half of them (the
  upstream is held back as the client would hold it back without the proxy). A client that
  takes nothing for ``client_stall`` seconds meanwhile is ended: the recorded connection is
  ``dropped`` with why, the stream ends and the upstream is told (``DELETE``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.sse import SseReader, SseTooLong
from acp_proxy.remote.asgi import Receive, Send, lifespan
from acp_proxy.remote.content_coding import Decoder, Undecodable, codings, decode_body
from acp_proxy.remote.headers import WEBSOCKET_HANDSHAKE, end_to_end, header, recordable
from acp_proxy.remote.recording import HubFeeder, wall_ns
from acp_proxy.remote.upstream import Answer, Upstream, UpstreamError
from acp_proxy.remote.upstream_websocket import InvalidText
from acp_proxy.remote.websocket_out import MessageWriter
from acp_proxy.stderr import Reporter

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
Scope = dict[str, Any]

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_BUFFERED_BYTES = 8 * 1024 * 1024
CLIENT_STALL_SECONDS = 30.0
IDLE_TIMEOUT_SECONDS = 300.0
BODY_EXCERPT_BYTES = 4096
# Body pieces that waited for a client are sent joined, up to about this many bytes a write.
_JOINED_BYTES = 256 * 1024
# JSON-RPC's "server error" range: the proxy's own answers.
PROXY_ERROR_CODE = -32000
_JSON = [(b"content-type", b"application/json")]


@dataclass
class ProxyOptions:
    listen_url: str
    label: str | None = None
    record_credentials: bool = False
    max_body: int = MAX_BODY_BYTES
    max_buffered: int = MAX_BUFFERED_BYTES
    client_stall: float = CLIENT_STALL_SECONDS
    idle_timeout: float = IDLE_TIMEOUT_SECONDS


class _TooSlow(Exception):
    """The client left more than the bound waiting for it."""


class _Connection:
    """One recorded remote connection while it is open."""

    def __init__(self, key: int, remote_id: str | None) -> None:
        self.key = key
        self.remote_id = remote_id
        self.closed = False
        self.requests = 0  # its requests in flight (an open event stream is one)
        self.idle: asyncio.TimerHandle | None = None


def _json_rpc_error(request_body: bytes, message: str) -> bytes:
    """One JSON-RPC error line answering ``request_body`` (its id if it has one)."""
    rpc_id: Any = None
    with contextlib.suppress(orjson.JSONDecodeError, TypeError, AttributeError):
        value = orjson.loads(request_body)
        if isinstance(value, dict):
            rpc_id = value.get("id")
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": PROXY_ERROR_CODE, "message": message}}
    )


def _excerpt(body: bytes) -> str | None:
    if not body:
        return None
    return body[:BODY_EXCERPT_BYTES].decode("utf-8", "replace")


class _Outbox:
    """What waits to be sent to one client, bounded in bytes; sent in order by ``run``.

    An item is an ASGI message, ``bytes``: a piece of an answer body (``more_body``), or a
    ``list`` of WebSocket messages (``str`` text, ``bytes`` binary) for ``send_messages``.
    Pieces of the same kind that are waiting when the client takes the next are joined. The
    reader puts an item, then awaits ``room``: past ``bound`` bytes that waits until the
    client has taken half of them, and raises ``_TooSlow`` when it takes nothing for
    ``stall`` seconds meanwhile.
    """

    def __init__(self, bound: int, stall: float) -> None:
        self._items: deque[Any] = deque()
        self._bytes = 0
        self._bound = bound
        self._stall = stall
        self._ready = asyncio.Event()
        self._drained = asyncio.Event()
        self._sent = 0  # items the client has taken
        self._ended = False

    def put(self, item: Any, size: int) -> None:
        self._items.append((item, size))
        self._bytes += size
        self._ready.set()

    async def room(self) -> None:
        while self._bytes > self._bound:
            sent = self._sent
            self._drained.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), self._stall)
            if self._sent == sent:
                raise _TooSlow(
                    f"it took nothing for {self._stall:g} s while more than {self._bound} "
                    "bytes waited for it"
                )

    def end(self) -> None:
        self._ended = True
        self._ready.set()

    async def run(
        self, send: Callable[[Any], Awaitable[None]],
        send_messages: Callable[[list[str | bytes]], Awaitable[None]] | None = None,
    ) -> None:  # fmt: skip
        items = self._items
        while True:
            await self._ready.wait()
            while items:
                item, size = items.popleft()
                if isinstance(item, bytes) and items and isinstance(items[0][0], bytes):
                    # Body chunks that waited for the client go in one write: the same bytes
                    # in fewer, larger pieces (chunk boundaries are the hop's, not the body's).
                    parts = [item]
                    while items and isinstance(items[0][0], bytes) and size < _JOINED_BYTES:
                        more, more_size = items.popleft()
                        parts.append(more)
                        size += more_size
                    item = b"".join(parts)
                elif isinstance(item, list) and items and isinstance(items[0][0], list):
                    # WebSocket messages that waited for the client go in one write, each
                    # still its own frame (remote/websocket_out.py).
                    messages = list(item)
                    while items and isinstance(items[0][0], list) and size < _JOINED_BYTES:
                        more, more_size = items.popleft()
                        messages += more
                        size += more_size
                    item = messages
                if isinstance(item, bytes):
                    item = {"type": "http.response.body", "body": item, "more_body": True}
                if isinstance(item, list):
                    assert send_messages is not None
                    await send_messages(item)
                else:
                    await send(item)
                self._bytes -= size
                self._sent += 1
                if self._bytes <= self._bound // 2:
                    self._drained.set()
            if self._ended:
                return
            self._ready.clear()


class ReverseProxy:
    """The ASGI application (one per listener)."""

    def __init__(
        self, upstream: Upstream, feeder: HubFeeder, options: ProxyOptions, report: Reporter
    ) -> None:
        self.upstream = upstream
        self.feeder = feeder
        self.options = options
        self._report = report
        self._by_id: dict[str, _Connection] = {}
        self._open: dict[int, _Connection] = {}
        self._upstream_down = False
        self._said: set[str] = set()
        self._background: set[asyncio.Future[None]] = set()

    # --- ASGI ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        try:
            if kind == "http":
                await self._http(scope, receive, send)
            elif kind == "websocket":
                await self._websocket(scope, receive, send)
            elif kind == "lifespan":
                await lifespan(receive, send)
        except Exception as error:  # never the listener's end: say it once, end this request
            self._say_once(
                "internal", f"a request failed inside the proxy ({type(error).__name__}: {error})"
            )

    def _elsewhere(self) -> bytes:
        return orjson.dumps({"error": f"acp-proxy serves {self.upstream.endpoint.path} only"})

    def _recordable(self, headers: list[tuple[bytes, bytes]]) -> list[list[str | None]]:
        return recordable(headers, credentials=self.options.record_credentials)

    def _say_once(self, topic: str, message: str) -> None:
        if topic not in self._said:
            self._said.add(topic)
            self._report(message)

    def close_all(self, why: str) -> None:
        """The listener stops: every connection still open ends ``dropped``."""
        for connection in list(self._open.values()):
            self._end(connection, "dropped", why)

    def _end(self, connection: _Connection, status: str, error: str | None = None) -> None:
        if connection.closed:
            return
        connection.closed = True
        if connection.idle is not None:
            connection.idle.cancel()
        self._open.pop(connection.key, None)
        if connection.remote_id is not None and self._by_id.get(connection.remote_id) is connection:
            del self._by_id[connection.remote_id]
        self.feeder.close(connection.key, status, error)

    # --- idle Streamable HTTP connections ----------------------------------------------

    def _busy(self, connection: _Connection) -> None:
        connection.requests += 1
        if connection.idle is not None:
            connection.idle.cancel()
            connection.idle = None

    def _rested(self, connection: _Connection) -> None:
        """One of its requests is over: with none left, the idle clock starts."""
        connection.requests -= 1
        timeout = self.options.idle_timeout
        if connection.requests or connection.closed or connection.remote_id is None:
            return
        if timeout > 0:
            loop = asyncio.get_running_loop()
            connection.idle = loop.call_later(timeout, self._reap, connection)

    def _reap(self, connection: _Connection) -> None:
        """A connection without a request or an event stream for ``idle_timeout``: its client
        went away without ``DELETE``. End it here and at the upstream."""
        connection.idle = None
        if connection.closed or connection.requests:
            return
        timeout = self.options.idle_timeout
        self._say_once(
            "idle",
            f"ended a connection idle for {timeout:g} s (no request, no event stream open: "
            "--idle-timeout); each one ended so is recorded with why",
        )
        self._end(
            connection, "dropped",
            f"idle for {timeout:g} s (no request, no event stream open): the proxy ended the "
            "connection and told the upstream (DELETE)",
        )  # fmt: skip
        task = asyncio.ensure_future(self._delete_upstream(connection))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _new_connection(self, transport: str, scope: Scope, remote_id: str | None) -> _Connection:
        client = scope.get("client")
        address = f"{client[0]}:{client[1]}" if client else None
        key, _ = self.feeder.open(
            transport, remote_url=self.upstream.endpoint.url,
            listen_url=self.options.listen_url, client_address=address,
            label=self.options.label,
        )  # fmt: skip
        connection = _Connection(key, remote_id)
        self._open[key] = connection
        if remote_id is not None:
            self._by_id[remote_id] = connection
            self.feeder.update(key, remote_connection_id=remote_id)
        return connection

    # --- Streamable HTTP ----------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if path != self.upstream.endpoint.path:
            await _answer(send, 404, self._elsewhere())
            return
        method: str = scope["method"]
        query: bytes = scope.get("query_string") or b""
        target = scope.get("raw_path", b"").decode("latin-1") or path
        if query:
            target = target.split("?", 1)[0] + "?" + query.decode("latin-1")
        headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        body, too_long = await _read_body(receive, self.options.max_body)
        raw_id = header(headers, b"acp-connection-id")
        raw_session = header(headers, b"acp-session-id")
        remote_id = raw_id.decode("latin-1") if raw_id is not None else None
        session_id = raw_session.decode("latin-1") if raw_session is not None else None
        stream = _stream_of(method, session_id)
        connection = self._by_id.get(remote_id) if remote_id is not None else None
        new = connection is None
        if connection is None:
            connection = self._new_connection("http", scope, remote_id)
        self._busy(connection)
        try:
            await self._exchange(
                connection, new, scope, method, target, headers, body, too_long, remote_id,
                session_id, stream, send, receive,
            )  # fmt: skip
        finally:
            self._rested(connection)

    async def _exchange(
        self, connection: _Connection, new: bool, scope: Scope, method: str, target: str,
        headers: list[tuple[bytes, bytes]], body: bytes, too_long: bool, remote_id: str | None,
        session_id: str | None, stream: str, send: Send, receive: Receive,
    ) -> None:  # fmt: skip
        key = connection.key
        exchange = self.feeder.exchange(
            key, method=method, target=target, http_version=scope.get("http_version"),
            stream=stream, acp_connection_id=remote_id, acp_session_id=session_id,
            request_headers=self._recordable(headers),
        )  # fmt: skip
        if too_long:
            message = f"acp-proxy: the request body is over {self.options.max_body} bytes"
            await _answer(send, 413, _json_rpc_error(b"", message))
            self.feeder.exchange_set(
                key, exchange, status=413, answered_ns=wall_ns(), ended_ns=wall_ns(),
                error=f"request body over {self.options.max_body} bytes: not forwarded",
            )  # fmt: skip
            if new and remote_id is None:
                self._end(connection, "closed", "the request was refused by the proxy (413)")
            return
        if body and method == "POST":
            await self.feeder.message(key, C2A, body, exchange, "post")
        try:
            response = await self.upstream.send(method, target, end_to_end(headers), body)
        except UpstreamError as error:
            await self._unreachable(connection, exchange, new, body, send, error)
            return
        if self._upstream_down:
            self._upstream_down = False
            self._said.discard("upstream")
        try:
            await self._answer_upstream(
                connection, exchange, new, method, stream, response, receive, send
            )
        finally:
            await response.close()

    async def _unreachable(
        self, connection: _Connection, exchange: int, new: bool, body: bytes, send: Send,
        error: UpstreamError,
    ) -> None:  # fmt: skip
        why = _unreachable(self.upstream.endpoint.url, error)
        self._upstream_down = True
        self._say_once("upstream", f"{why}; clients get 502 until it answers")
        await _answer(send, 502, _json_rpc_error(body, f"acp-proxy: {why}"))
        self.feeder.exchange_set(
            connection.key, exchange, status=502, answered_ns=wall_ns(), ended_ns=wall_ns(),
            error=f"upstream unreachable: {type(error).__name__}: {error}",
        )  # fmt: skip
        if new:
            self._end(connection, "closed", "the upstream was unreachable (the client got 502)")

    async def _answer_upstream(
        self, connection: _Connection, exchange: int, new: bool, method: str, stream: str,
        response: Answer, receive: Receive, send: Send,
    ) -> None:  # fmt: skip
        key = connection.key
        status = response.status
        raw_headers = response.raw_headers
        given = header(raw_headers, b"acp-connection-id")
        if new and connection.remote_id is None and given is not None:
            connection.remote_id = given.decode("latin-1")
            self._by_id[connection.remote_id] = connection
            self.feeder.update(key, remote_connection_id=connection.remote_id)
        await send({"type": "http.response.start", "status": status,
                    "headers": end_to_end(raw_headers)})  # fmt: skip
        self.feeder.exchange_set(
            key, exchange, status=status, answered_ns=wall_ns(),
            response_headers=recordable(raw_headers, credentials=self.options.record_credentials),
        )  # fmt: skip
        content_type = (response.header("content-type") or "").lower()
        if content_type.startswith("text/event-stream") and stream.endswith("_sse"):
            await self._event_stream(connection, exchange, stream, response, receive, send)
        else:
            body = await self._body(connection, exchange, method, response, send)
            self.feeder.exchange_set(key, exchange, ended_ns=wall_ns())
            if 200 <= status < 300 and not content_type.startswith("application/json"):
                body = b""
            if body and not (200 <= status < 300):
                self.feeder.exchange_set(key, exchange, body=_excerpt(body))
        if new and connection.remote_id is None:
            why = f"the upstream answered {status} without an Acp-Connection-Id"
            self._end(connection, "closed", why)
        elif new and status == 404:
            why = "the upstream does not know this Acp-Connection-Id (404)"
            self._end(connection, "closed", why)
        elif method == "DELETE" and 200 <= status < 300:
            self._end(connection, "closed")

    async def _body(
        self, connection: _Connection, exchange: int, method: str, response: Answer,
        send: Send,
    ) -> bytes:  # fmt: skip
        """Read the whole answer (bounded), record a JSON-RPC answer, send it on."""
        chunks: list[bytes] = []
        size = 0
        streaming = False
        async for chunk in response.chunks():
            if not streaming:
                chunks.append(chunk)
                size += len(chunk)
                if size > self.options.max_body:  # too long to keep: stream the rest
                    streaming = True
                    await send({"type": "http.response.body", "body": b"".join(chunks),
                                "more_body": True})  # fmt: skip
                    chunks = []
            else:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if streaming:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self.feeder.exchange_set(
                connection.key,
                exchange,
                error=f"answer over {self.options.max_body} bytes: forwarded, not recorded",
            )
            return b""
        body = b"".join(chunks)
        content_type = (response.header("content-type") or "").lower()
        if (
            body and method == "POST" and 200 <= response.status < 300
            and content_type.startswith("application/json")
        ):  # fmt: skip
            try:  # the recording gets the message; the client gets the bytes as they came
                message = decode_body(
                    body, response.header("content-encoding"), self.options.max_body
                )
            except Undecodable as why:
                self.feeder.lost(connection.key, A2C, len(body), f"{why}: not recorded")
            else:
                await self.feeder.message(connection.key, A2C, message, exchange, "post_answer")
        await send({"type": "http.response.body", "body": body, "more_body": False})
        return body

    async def _event_stream(
        self, connection: _Connection, exchange: int, stream: str, response: Answer,
        receive: Receive, send: Send,
    ) -> None:  # fmt: skip
        key = connection.key
        reader = SseReader(max_line=self.options.max_body)
        outbox = _Outbox(self.options.max_buffered, self.options.client_stall)
        applied = codings(response.header("content-encoding"))
        decoder: Decoder | None = None
        if applied:
            try:
                decoder = Decoder(applied)
            except Undecodable as why:
                self.feeder.lost(key, A2C, 0, f"{why}: the event stream is not recorded")

        async def record_decoded(chunk: bytes) -> None:
            """A compressed stream's chunk: its events recorded piece by decoded piece; a
            fault in decoding ends the recording of the stream, never its forwarding."""
            nonlocal decoder
            assert decoder is not None
            try:
                for piece in decoder.feed(chunk):
                    datas = reader.feed_data(piece)
                    if datas:
                        await self.feeder.messages(key, A2C, datas, exchange, stream)
            except (Undecodable, SseTooLong) as why:
                decoder = None
                self.feeder.lost(
                    key, A2C, len(chunk), f"{why}: the rest of the event stream is not recorded"
                )

        async def from_upstream() -> None:
            async for chunk in response.chunks():
                if decoder is not None:
                    await record_decoded(chunk)
                elif applied:
                    pass  # a coding the proxy does not decode: forwarded only (counted once)
                else:
                    datas = reader.feed_data(chunk)
                    if datas:
                        await self.feeder.messages(key, A2C, datas, exchange, stream)
                # Reads and sends that never wait (a fast upstream, a client that is gone)
                # would otherwise keep every other connection, and the disconnect, waiting.
                await asyncio.sleep(0)
                outbox.put(chunk, len(chunk))
                await outbox.room()
            outbox.put({"type": "http.response.body", "body": b"", "more_body": False}, 0)
            outbox.end()

        async def client_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        reading = asyncio.ensure_future(from_upstream())
        writing = asyncio.ensure_future(outbox.run(send))
        gone = asyncio.ensure_future(client_gone())
        error: str | None = None
        try:
            done, _ = await asyncio.wait(
                {reading, gone, writing}, return_when=asyncio.FIRST_COMPLETED
            )
            if reading in done and reading.exception() is None:
                done, _ = await asyncio.wait({writing, gone}, return_when=asyncio.FIRST_COMPLETED)
            if gone in done:
                error = "the client went away"
            for task in done:
                failure = task.exception()
                if isinstance(failure, _TooSlow):
                    error = f"the client read the event stream too slowly ({failure})"
                elif isinstance(failure, SseTooLong):
                    error = f"the upstream sent an event stream line too long ({failure})"
                elif isinstance(failure, UpstreamError) and error is None:
                    error = f"the upstream ended the stream ({type(failure).__name__}: {failure})"
                elif failure is not None and error is None:
                    error = f"the client went away ({type(failure).__name__})"
        finally:
            for task in (reading, writing, gone):
                task.cancel()
            for task in (reading, writing, gone):
                with contextlib.suppress(BaseException):
                    await task
        self.feeder.exchange_set(key, exchange, ended_ns=wall_ns(), error=error)
        if error is not None and "too slowly" in error:
            self._report(f"ended a connection whose client {error[len('the client ') :]}")
            self._end(connection, "dropped", f"the proxy ended the connection: {error}")
            await self._delete_upstream(connection)

    async def _delete_upstream(self, connection: _Connection) -> None:
        """Tell the upstream a connection the proxy ended is over (best effort)."""
        if connection.remote_id is None:
            return
        with contextlib.suppress(UpstreamError):
            response = await self.upstream.send(
                "DELETE", self.upstream.endpoint.path,
                [(b"acp-connection-id", connection.remote_id.encode("latin-1"))], b"",
            )  # fmt: skip
            await response.close()

    # --- WebSocket ----------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        opening = await receive()
        if opening["type"] != "websocket.connect":
            return
        path: str = scope["path"]
        if path != self.upstream.endpoint.path:
            await _deny(send, 404, self._elsewhere())
            return
        query: bytes = scope.get("query_string") or b""
        target = path + ("?" + query.decode("latin-1") if query else "")
        headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        connection = self._new_connection("websocket", scope, None)
        key = connection.key
        exchange = self.feeder.exchange(
            key, method="GET", target=target, http_version=scope.get("http_version"),
            stream="websocket",
            request_headers=self._recordable(headers),
        )  # fmt: skip
        try:
            upstream = await self.upstream.websocket(
                target, end_to_end(headers, drop=WEBSOCKET_HANDSHAKE),
                list(scope.get("subprotocols") or []),
            )  # fmt: skip
        except InvalidStatus as refused:
            answer = refused.response
            raw_headers = [
                (n.encode("latin-1"), v.encode("latin-1")) for n, v in answer.headers.raw_items()
            ]
            refusal = bytes(answer.body or b"")
            await _deny(send, answer.status_code, refusal, end_to_end(raw_headers))
            self.feeder.exchange_set(
                key, exchange, status=answer.status_code, answered_ns=wall_ns(),
                ended_ns=wall_ns(), body=_excerpt(refusal),
                response_headers=self._recordable(raw_headers),
            )  # fmt: skip
            why = f"the upstream refused the WebSocket ({answer.status_code})"
            self._end(connection, "closed", why)
            return
        except (OSError, InvalidHandshake, TimeoutError) as failure:
            why = _unreachable(self.upstream.endpoint.ws_url(path), failure)
            self._say_once("upstream", f"{why}; clients get 502 until it answers")
            await _deny(send, 502, _json_rpc_error(b"", f"acp-proxy: {why}"))
            self.feeder.exchange_set(
                key, exchange, status=502, answered_ns=wall_ns(), ended_ns=wall_ns(),
                error=f"upstream unreachable: {type(failure).__name__}: {failure}",
            )  # fmt: skip
            self._end(connection, "closed", "the upstream was unreachable (the client got 502)")
            return
        self._said.discard("upstream")
        answer_headers = [
            (n.encode("latin-1"), v.encode("latin-1"))
            for n, v in (upstream.response.headers.raw_items() if upstream.response else [])
        ]
        given = header(answer_headers, b"acp-connection-id")
        if given is not None:
            connection.remote_id = given.decode("latin-1")
            self.feeder.update(key, remote_connection_id=connection.remote_id)
        await send({
            "type": "websocket.accept", "subprotocol": upstream.subprotocol,
            "headers": end_to_end(answer_headers, drop=WEBSOCKET_HANDSHAKE),
        })  # fmt: skip
        self.feeder.exchange_set(
            key, exchange, status=101, answered_ns=wall_ns(),
            response_headers=self._recordable(answer_headers),
        )  # fmt: skip
        outbox = _Outbox(self.options.max_buffered, self.options.client_stall)
        ended: dict[str, Any] = {}

        async def from_client() -> None:
            while True:
                message = await receive()
                if message["type"] == "websocket.receive":
                    text = message.get("text")
                    if text is not None:
                        raw = text.encode()
                        await self.feeder.message(key, C2A, raw, exchange, "websocket")
                        await upstream.send(text)
                    else:
                        data = message.get("bytes") or b""
                        await self.feeder.message(key, C2A, data, exchange, "websocket")
                        await upstream.send(data)
                elif message["type"] == "websocket.disconnect":
                    ended.setdefault("by", "client")
                    ended.setdefault("code", message.get("code", 1000))
                    return

        async def from_upstream() -> None:
            # A network read's messages at a time: recorded in one hand-off, then put for the
            # client together (remote/upstream_websocket.py).
            try:
                async for messages, raws in upstream.batches():
                    await self.feeder.messages(key, A2C, raws, exchange, "websocket")
                    outbox.put(messages, sum(map(len, raws)))
                    await outbox.room()
            except InvalidText as invalid:
                if "by" not in ended:
                    ended["why"] = (
                        f"the upstream sent {invalid}: the proxy ended the WebSocket (1007), "
                        "what came before it forwarded"
                    )
                    ended.update(by="upstream", code=1007)
                outbox.put({"type": "websocket.close", "code": 1007, "reason": ""}, 0)
                outbox.end()
                return
            ended.setdefault("by", "upstream")
            ended.setdefault("code", upstream.close_code or 1000)
            outbox.put({"type": "websocket.close", "code": _sendable_code(upstream.close_code),
                        "reason": upstream.close_reason or ""}, 0)  # fmt: skip
            outbox.end()

        offered = header(headers, b"sec-websocket-extensions") is not None
        writer = asyncio.ensure_future(outbox.run(send, MessageWriter(send, offered).send))
        tasks = {asyncio.ensure_future(from_client()), asyncio.ensure_future(from_upstream()),
                 writer}  # fmt: skip
        error: str | None = None
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                problem = task.exception()
                if isinstance(problem, _TooSlow):
                    error = f"the client read the WebSocket too slowly ({problem})"
                elif problem is not None and error is None:
                    error = f"the WebSocket failed ({type(problem).__name__}: {problem})"
            if error is None and ended.get("by") == "upstream" and writer not in done:
                # Let what the upstream sent before it closed, and the close, reach the client.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(writer), 5)
        finally:
            # The close handshake with the upstream first, whole (cancelling a close midway
            # would drop the TCP connection under it: the upstream would see 1006).
            closing = _sendable_code(ended.get("code")) if ended.get("by") == "client" else 1000
            with contextlib.suppress(Exception):
                await asyncio.wait_for(upstream.close(closing), 5)
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
        self.feeder.exchange_set(key, exchange, ended_ns=wall_ns(), error=error)
        code = ended.get("code")
        if error is not None:
            if "too slowly" in error:
                self._report(f"ended a connection whose client {error[len('the client ') :]}")
                self._end(connection, "dropped", f"the proxy ended the connection: {error}")
            else:
                self._end(connection, "dropped", error)
        elif code in (1000, 1001, 1005, None) or ended.get("by") == "client":
            # The listener's server reports every close by the client as 1006 (it does not
            # pass the close frame's code on), so a client's close is taken as a close.
            self._end(connection, "closed")
        else:
            why = ended.get("why") or f"the {ended.get('by')} closed the WebSocket with code {code}"
            self._end(connection, "dropped", why)


def _unreachable(url: str, error: BaseException) -> str:
    return f"the upstream {url} is unreachable ({type(error).__name__}: {error})"


def _sendable_code(code: int | None) -> int:
    """A close code that may be sent in a close frame (1005/1006 may not: RFC 6455 7.4.1)."""
    return 1000 if code is None or code in (1005, 1006, 1015) else code


def _stream_of(method: str, session_id: str | None) -> str:
    if method == "POST":
        return "post"
    if method == "GET":
        return "session_sse" if session_id is not None else "connection_sse"
    if method == "DELETE":
        return "delete"
    return "other"


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The whole request body, or (what was read, True) once it passes ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": _JSON})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _deny(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Refuse a WebSocket upgrade with an HTTP answer (ASGI's denial response)."""
    await send({"type": "websocket.http.response.start", "status": status,
                "headers": _JSON if headers is None else headers})  # fmt: skip
    await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
