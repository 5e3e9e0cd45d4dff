"""``record --connect URL``: a stdio agent to its client, a remote ACP client to URL.

Rules:
- The stdio side is replay's client port (replay/shell/ports.py): stdin read as it comes,
  stdout written as the client takes it, descriptors never changed. Every chunk read from
  stdin and every line written to stdout goes into the recording as ``record`` records an
  agent's pipes, so the recording holds the stdio side's bytes exactly.
- Each line from the client is one message to the remote end, in order (one sender task):
  its bytes without the line break are the POST body or the WebSocket text frame. Each
  message from the remote end (the ``initialize`` POST's body, an SSE event's data, a text
  frame) is one line to the client (client_routing.as_line). Blank lines are not sent.
- ``http(s)`` URLs speak Streamable HTTP (httpx: HTTP/2 where TLS offers it, HTTP/1.1 in
  clear text), routed by client_routing.py: one event stream for the connection, one per
  session, opened before the first message for that session is POSTed. ``ws(s)`` URLs speak
  WebSocket (``websockets``), text frames both ways; binary frames are dropped and said once.
  Cookies the server sets are kept for the connection. TLS is verified.
- A refused message (an HTTP error status) answers the request it carried with a JSON-RPC
  error and is said on stderr; the bridge goes on. When the remote end fails (cannot be
  reached, closes the WebSocket, ends the connection's event stream) every client request
  still waiting is answered with an error, it is said once, and the bridge ends with status 1.
- The client's end of file: what it sent is delivered, its requests still waiting get up to
  ``grace`` seconds for their answers, then the remote connection is ended (``DELETE`` with
  the connection id, or the WebSocket's close) and the status is 0. SIGINT, SIGTERM and SIGHUP
  end it the same way at once.
- The bridge's own words go to stderr (and into the recording as stderr lines); stdout carries
  protocol bytes only. Headers are sent, never recorded or said.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.sse import SseReader, SseTooLong
from acp_proxy.remote.client_routing import ClientRoutes, as_line, failure_answer
from acp_proxy.replay.shell.ports import ClientPort, Event, Input, Poke, Signalled
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    import httpx
    from websockets.asyncio.client import ClientConnection

    from acp_proxy.record.tap import Tap

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
CONNECT_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0
FLUSH_TIMEOUT = 5.0  # the longest the client gets to take the last bytes for it
CONNECTION_ID = "Acp-Connection-Id"
SESSION_ID = "Acp-Session-Id"
JSON = "application/json"
EVENT_STREAM = "text/event-stream"


class RemoteFailed(NamedTuple):
    reason: str


BridgeEvent = Event | RemoteFailed


class Remote:
    """What the bridge needs of a transport (``HttpRemote``, ``WebSocketRemote``)."""

    async def start(self, tasks: anyio.abc.TaskGroup) -> None:
        raise NotImplementedError

    async def send(self, body: bytes) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class Link:
    """What a transport calls back: a message for the client, a failure, a note."""

    def __init__(
        self, client: ClientPort, routes: ClientRoutes, inbox: MemoryObjectSendStream[BridgeEvent],
        say: Reporter,
    ) -> None:  # fmt: skip
        self.client, self.routes, self._inbox, self.say = client, routes, inbox, say
        self.closing = False

    def deliver(self, payload: bytes, stream_session: str | None = None) -> list[str]:
        """A message from the remote end, to the client; returns the sessions to open."""
        line = as_line(payload)
        opened = self.routes.incoming(line, stream_session)
        self.client.send(line, time.monotonic_ns())
        self._inbox.send_nowait(Poke())
        return opened

    def answer(self, line: bytes) -> None:
        """An answer of the bridge's own (an error for a refused request) to the client."""
        self.routes.incoming(line, None)
        self.client.send(line, time.monotonic_ns())
        self._inbox.send_nowait(Poke())

    def fail(self, reason: str) -> None:
        if not self.closing:
            self._inbox.send_nowait(RemoteFailed(reason))


class HttpRemote(Remote):
    """Streamable HTTP, with httpx (see the module rules)."""

    def __init__(self, url: str, headers: Sequence[tuple[str, str]], link: Link) -> None:
        import httpx

        self.url, self.link = url, link
        timeout = httpx.Timeout(connect=CONNECT_TIMEOUT, read=None, write=None, pool=None)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        self.http = httpx.AsyncClient(
            http2=True, timeout=timeout, limits=limits, headers=list(headers),
            follow_redirects=False,
        )  # fmt: skip
        self.connection_id: str | None = None
        self._scopes: list[anyio.CancelScope] = []  # one per event stream
        self._tasks: anyio.abc.TaskGroup | None = None

    async def start(self, tasks: anyio.abc.TaskGroup) -> None:
        self._tasks = tasks

    async def send(self, body: bytes) -> None:
        import httpx

        routes, link = self.link.routes, self.link
        out = routes.outgoing(body)
        headers = {"Content-Type": JSON, "Accept": f"{JSON}, {EVENT_STREAM}"}
        if not out.initialize or self.connection_id is not None:
            if self.connection_id is None:
                if out.is_request:
                    link.answer(failure_answer(out.request_id, "no connection: send initialize"))
                link.say("a message before initialize was not sent (no connection id yet)")
                return
            headers[CONNECTION_ID] = self.connection_id
            if out.session is not None:
                headers[SESSION_ID] = out.session
                if routes.new_session(out.session):
                    await self._open_stream(out.session, wait=True)
        try:
            response = await self.http.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as error:
            link.fail(f"the remote agent cannot be reached: {_why(error)}")
            return
        if out.initialize and self.connection_id is None:
            self._initialized(response, out.request_id)
            return
        if response.status_code == 200 and response.content.strip():
            for session in link.deliver(response.content):
                await self._open_stream(session, wait=False)
        elif response.status_code not in (200, 202):
            refused = _refusal(response)
            link.say(f"the remote agent refused a message: {refused}")
            if out.is_request:
                link.answer(
                    failure_answer(out.request_id, f"the remote agent refused it: {refused}")
                )

    def _initialized(self, response: httpx.Response, request_id: object) -> None:
        link = self.link
        connection_id = response.headers.get(CONNECTION_ID)
        if response.status_code != 200 or not connection_id:
            refused = _refusal(response) if response.status_code != 200 else (
                f"no {CONNECTION_ID} header on the initialize answer")  # fmt: skip
            link.say(f"initialize failed: {refused}")
            link.answer(failure_answer(request_id, f"initialize failed: {refused}"))  # type: ignore[arg-type]
            return
        self.connection_id = connection_id
        link.deliver(response.content)
        assert self._tasks is not None
        self._tasks.start_soon(self._stream, None, None)

    async def _open_stream(self, session: str, *, wait: bool) -> None:
        """Open ``session``'s event stream; with ``wait``, until the server answered the GET."""
        assert self._tasks is not None
        opened = anyio.Event()
        self._tasks.start_soon(self._stream, session, opened)
        if wait:
            with anyio.move_on_after(CONNECT_TIMEOUT):
                await opened.wait()

    async def _stream(self, session: str | None, opened: anyio.Event | None) -> None:
        import httpx

        link = self.link
        assert self.connection_id is not None
        headers = {"Accept": EVENT_STREAM, CONNECTION_ID: self.connection_id}
        if session is not None:
            headers[SESSION_ID] = session
        what = "the connection's event stream" if session is None else "a session's event stream"
        ended = f"the remote agent ended {what}"
        scope = anyio.CancelScope()
        self._scopes.append(scope)
        with scope:
            try:
                async with self.http.stream("GET", self.url, headers=headers) as response:
                    if opened is not None:
                        opened.set()
                    if response.status_code != 200:
                        await response.aread()
                        ended = f"the remote agent refused {what}: {_refusal(response)}"
                    else:
                        reader = SseReader()
                        async for chunk in response.aiter_bytes():
                            for event in reader.feed(chunk):
                                for new in link.deliver(event.data, session):
                                    await self._open_stream(new, wait=False)
            except httpx.HTTPError as error:
                ended = f"{what} failed: {_why(error)}"
            except SseTooLong:
                ended = f"{what} sent a line longer than the bridge keeps"
            finally:
                if opened is not None:
                    opened.set()
        if link.closing:
            return
        if session is None:
            link.fail(ended)
        else:
            link.say(ended)

    async def close(self) -> None:
        for scope in self._scopes:
            scope.cancel()
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            if self.connection_id is not None:
                # The end of a connection that may be gone already: nothing left to tell.
                with contextlib.suppress(Exception):
                    await self.http.delete(self.url, headers={CONNECTION_ID: self.connection_id})
            await self.http.aclose()


class WebSocketRemote(Remote):
    """WebSocket, with ``websockets`` (see the module rules)."""

    def __init__(self, url: str, headers: Sequence[tuple[str, str]], link: Link) -> None:
        self.url, self.headers, self.link = url, list(headers), link
        self.socket: ClientConnection | None = None
        self._said_binary = False

    async def start(self, tasks: anyio.abc.TaskGroup) -> None:
        from websockets.asyncio.client import connect

        try:
            self.socket = await connect(
                self.url, additional_headers=self.headers or None, max_size=None,
                compression=None, open_timeout=CONNECT_TIMEOUT, proxy=None,
            )  # fmt: skip
        except Exception as error:
            self.link.fail(f"the remote agent cannot be reached: {_why(error)}")
            return
        tasks.start_soon(self._receive)

    async def send(self, body: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        link = self.link
        out = link.routes.outgoing(body)
        if self.socket is None:
            return
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            link.say("a line that is not UTF-8 was not sent (a WebSocket text frame must be)")
            if out.is_request:
                link.answer(failure_answer(out.request_id, "not UTF-8"))
            return
        try:
            await self.socket.send(body, text=True)
        except ConnectionClosed as closed:
            link.fail(f"the remote agent closed the WebSocket ({_close_code(closed)})")

    async def _receive(self) -> None:
        from websockets.exceptions import ConnectionClosed

        socket, link = self.socket, self.link
        assert socket is not None
        try:
            while True:
                message = await socket.recv()
                if isinstance(message, str):
                    link.deliver(message.encode())
                elif not self._said_binary:
                    self._said_binary = True
                    link.say("the remote agent sent a binary WebSocket frame: dropped")
        except ConnectionClosed as closed:
            link.fail(f"the remote agent closed the WebSocket ({_close_code(closed)})")

    async def close(self) -> None:
        if self.socket is not None:
            with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                await self.socket.close()


def _close_code(closed: Exception) -> str:
    received = getattr(closed, "rcvd", None)
    if received is None:
        return "no close frame"
    reason = f": {received.reason}" if received.reason else ""
    return f"code {received.code}{reason}"


def _why(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text[:300]


def _refusal(response: httpx.Response) -> str:
    """An HTTP error answer, in one short line."""
    try:
        body = response.content[:200].decode("utf-8", "replace").strip()
    except Exception:
        body = ""
    phrase = response.reason_phrase or ""
    shown = f"HTTP {response.status_code} {phrase}".rstrip()
    return f"{shown}: {' '.join(body.split())}" if body else shown


class Bridge:
    def __init__(
        self, url: str, transport: str, headers: Sequence[tuple[str, str]], grace: float,
        report: Reporter, tap: Tap | None,
    ) -> None:  # fmt: skip
        self.url, self.transport, self.headers, self.grace = url, transport, headers, grace
        self._report, self.tap = report, tap
        self.status = 0

    def say(self, message: str) -> None:
        """The bridge's words: on stderr, and in the recording as a stderr line."""
        self._report(message)
        if self.tap is not None:
            line = f"acp-proxy: {message}\n".encode(errors="replace")
            self.tap.put(Direction.AGENT_STDERR, time.monotonic_ns(), line)

    async def run(self, stdin_fd: int = 0, stdout_fd: int = 1) -> int:
        inbox, events = anyio.create_memory_object_stream[BridgeEvent](math.inf)
        outgoing, to_send = anyio.create_memory_object_stream[bytes](math.inf)
        with events, inbox, anyio.open_signal_receiver(*STOPPING) as signals:
            async with anyio.create_task_group() as tasks:
                client = ClientPort(stdin_fd, stdout_fd, self.tap, inbox)
                link = Link(client, ClientRoutes(), inbox, self.say)
                make: Callable[[str, Sequence[tuple[str, str]], Link], Remote]
                make = HttpRemote if self.transport == "http" else WebSocketRemote
                remote = make(self.url, self.headers, link)

                async def receive_signals() -> None:
                    async for signum in signals:
                        inbox.send_nowait(Signalled(signum))

                sent = anyio.Event()

                async def send_all() -> None:
                    await remote.start(tasks)
                    async with to_send:
                        async for body in to_send:
                            await remote.send(body)
                    sent.set()
                    inbox.send_nowait(Poke())

                tasks.start_soon(receive_signals)
                tasks.start_soon(client.read)
                tasks.start_soon(client.write)
                tasks.start_soon(send_all)
                try:
                    await self._run(events, outgoing, link, sent)
                finally:
                    link.closing = True
                    with anyio.CancelScope(shield=True):
                        await remote.close()
                        with anyio.move_on_after(FLUSH_TIMEOUT):
                            while client.pending and not client.gone:
                                await anyio.sleep(0.01)
                    tasks.cancel_scope.cancel()
        return self.status

    async def _run(
        self, events: MemoryObjectReceiveStream[BridgeEvent],
        outgoing: MemoryObjectSendStream[bytes],
        link: Link, sent: anyio.Event,
    ) -> None:  # fmt: skip
        client, routes = link.client, link.routes
        ending_at: float | None = None  # the client's input ended: the grace runs out then
        while True:
            if ending_at is not None and sent.is_set() and not routes.pending:
                return
            deadline = math.inf if ending_at is None else ending_at
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())) as waited:
                event = await events.receive()
            if waited.cancelled_caught:
                return  # the grace after the client's end of file is over
            if isinstance(event, Input):
                for raw in event.frames:
                    body = raw.rstrip(b"\r\n")
                    if body.strip():
                        outgoing.send_nowait(body)
                if event.ended and ending_at is None:
                    outgoing.close()
                    ending_at = anyio.current_time() + self.grace
            elif isinstance(event, Signalled):
                return
            elif isinstance(event, RemoteFailed):
                self.say(event.reason)
                for line in routes.failure_answers(event.reason):
                    client.send(line, time.monotonic_ns())
                self.status = 1
                return
            elif client.gone:
                return


def run_bridge(
    url: str, transport: str, headers: Sequence[tuple[str, str]], grace: float,
    report: Reporter, tap: Tap | None,
) -> int:  # fmt: skip
    """Bridge the client on fds 0 and 1 to ``url`` until either ends; the exit status."""
    bridge = Bridge(url, transport, headers, grace, report, tap)
    return anyio.run(bridge.run)
