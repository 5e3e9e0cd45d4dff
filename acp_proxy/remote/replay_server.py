"""``replay --listen``: recordings replayed to remote clients, over Streamable HTTP and WebSocket.

Rules:
- One ASGI application (``Listener``) served by hypercorn: HTTP/1.1, cleartext HTTP/2 (h2c)
  and the WebSocket upgrade, on any path (the address said is ``/acp``, the convention).
- Each transport connection (an ``initialize`` POST without ``Acp-Connection-Id``, or one
  WebSocket) is one replay, from a fresh engine (``Served``, made by the caller from the
  sans-I/O replay engine): the same rules as ``replay`` on stdio (matching, the client's ids,
  notices dropped, timing, timeouts, the divergence report). Its frames go in as the client
  sent them (a POST's body, a text frame), one line each; its agent frames come out routed by
  server_routing.py (SSE ``data:`` events, text frames, the ``initialize`` POST's body).
- Streamable HTTP, by the RFD: POST needs ``Content-Type: application/json`` (415), one JSON
  object (a batch: 501; not JSON: 400), the connection id after ``initialize`` (missing: 400;
  unknown or ended: 404) and ``Acp-Session-Id`` for the session-scoped methods (400); GET needs
  ``Accept: text/event-stream`` (406) and a connection id; DELETE ends the connection (202).
  Other methods: 405. Idle event streams get a keep-alive comment every ``keepalive`` seconds.
- A connection's replay ends as on stdio (the engine is done: its streams end, its WebSocket
  closes with 1000), or when the client leaves (DELETE, the WebSocket closed): its summary is
  said on stderr then. A DELETE after its replay ended is still answered 202; any other
  request for it gets 404. A stopping signal stops every replay still running (``stop_all``).
- Peer bytes never crash the listener: every refusal is an HTTP status with a short JSON body.
- With a ``ReplayRecording`` (``--record``) every connection served is recorded as
  ``record --listen`` records one (replay_recording.py): each exchange, each message before it
  is delivered, on its stream.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import orjson

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.jsonrpc import JsonId, Kind, decode, envelope
from acp_proxy.remote.asgi import lifespan
from acp_proxy.remote.replay_recording import ConnectionRecording, NoRecording, ReplayRecording
from acp_proxy.remote.server_routing import ServerRoutes, answers, session_required
from acp_proxy.replay.modes import Conversation
from acp_proxy.stderr import Reporter

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CONNECTION_ID = b"acp-connection-id"
SESSION_ID = b"acp-session-id"
KEEPALIVE = 15.0
KEEPALIVE_COMMENT = b": keepalive\n\n"
INITIALIZE = "initialize"
C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
NOT_RECORDED = NoRecording()


@dataclass
class Served:
    """One replay as the listener runs it: the conversation, and how to tell its outcome."""

    conversation: Conversation
    summarize: Callable[[str], str]  # its summary paragraph, given what it was
    diverged: Callable[[], bool]


@dataclass
class Outbox:
    """Lines for one stream (an SSE response, a WebSocket), taken by its writer."""

    lines: deque[bytes] = field(default_factory=deque)
    wake: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False
    attached: bool = False

    def put(self, line: bytes) -> None:
        self.lines.append(line)
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.wake.set()

    def take(self) -> list[bytes]:
        lines = list(self.lines)
        self.lines.clear()
        return lines

    async def wait(self, timeout: float) -> None:
        with anyio.move_on_after(timeout):
            await self.wake.wait()
        self.wake = anyio.Event()


@dataclass
class _Waiter:
    rpc_id: JsonId
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: bytes | None = None


class ServedConnection:
    """One transport connection and its replay."""

    def __init__(
        self, connection_id: str, number: int, served: Served, websocket: bool,
        recording: ConnectionRecording = NOT_RECORDED,
    ) -> None:  # fmt: skip
        self.connection_id, self.number, self.served = connection_id, number, served
        self.websocket, self.recording = websocket, recording
        self.routes = ServerRoutes()
        self.streams: dict[str | None, Outbox] = {None: Outbox()}  # None: the connection's
        self.waiters: list[_Waiter] = []
        self.done = anyio.Event()
        self._bell = anyio.Event()
        self.ended = False
        self.client_gone = False

    @property
    def what(self) -> str:
        profile = "WebSocket" if self.websocket else "Streamable HTTP"
        return f"remote connection {self.number} ({profile})"

    def receive(self, raw: bytes, header_session: str | None = None) -> None:
        """One message from the client (its bytes, a line break added)."""
        line = raw + b"\n"
        self.routes.client_message(line, header_session)
        self.served.conversation.client_frame(line, time.monotonic_ns())
        self._bell.set()

    def client_closed(self) -> None:
        self.client_gone = True
        self.served.conversation.client_closed(time.monotonic_ns())
        self._bell.set()

    def stop(self, reason: str) -> None:
        self.served.conversation.stop(reason)
        self._bell.set()

    def wait_for_answer(self, rpc_id: JsonId) -> _Waiter:
        waiter = _Waiter(rpc_id)
        self.waiters.append(waiter)
        return waiter

    def stream(self, session: str | None) -> Outbox:
        box = self.streams.get(session)
        if box is None or box.closed:
            box = self.streams[session] = Outbox()
        return box

    async def drive(self) -> None:
        """Step the replay until it is done (see the module rules)."""
        conversation = self.served.conversation
        while True:
            now = time.monotonic_ns()
            actions = conversation.step(now)
            if actions.to_client:
                self._route(actions.to_client)
            if actions.done:
                break
            timeout = math.inf if actions.wake_at is None else (actions.wake_at - now) / 1e9
            with anyio.move_on_after(max(0.0, timeout)):
                await self._bell.wait()
            self._bell = anyio.Event()
        self.ended = True
        for waiter in self.waiters:
            waiter.answered.set()
        for box in self.streams.values():
            box.close()
        self.done.set()

    def _route(self, data: bytes) -> None:
        open_sessions = {s for s, box in self.streams.items() if s is not None and box.attached}
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            waiter = next((w for w in self.waiters if answers(line, w.rpc_id)), None)
            if waiter is not None:
                self.waiters.remove(waiter)
                waiter.answer = line.rstrip(b"\r")
                waiter.answered.set()
                continue
            if self.websocket:
                self.streams[None].put(line.rstrip(b"\r"))
                continue
            session = self.routes.destination(line, open_sessions)
            self.stream(session).put(line.rstrip(b"\r"))


class Listener:
    """The ASGI application: connections by id, each a replay (see the module rules)."""

    def __init__(
        self, make: Callable[[], Served], report: Reporter, *, timeout: float,
        keepalive: float = KEEPALIVE, recording: ReplayRecording | None = None,
    ) -> None:  # fmt: skip
        self.make, self.report, self.timeout, self.keepalive = make, report, timeout, keepalive
        self.recording = recording
        self.connections: dict[str, ServedConnection] = {}
        # Recorded connections by id, until the client has left (they outlive their replay).
        self.recordings: dict[str, ConnectionRecording] = {}
        self.finished: set[str] = set()  # replays over, the client not gone yet (no DELETE)
        self.outcomes: list[bool] = []  # diverged, per connection that ended
        self.tasks: anyio.abc.TaskGroup | None = None
        self._count = 0

    def _open(self, websocket: bool, scope: Scope) -> ServedConnection:
        self._count += 1
        recording: ConnectionRecording = NOT_RECORDED
        if self.recording is not None:
            recording = self.recording.open("websocket" if websocket else "http", scope)
        connection = ServedConnection(
            uuid.uuid4().hex, self._count, self.make(), websocket, recording
        )
        self.connections[connection.connection_id] = connection
        self.recordings[connection.connection_id] = recording
        assert self.tasks is not None
        self.tasks.start_soon(self._run, connection)
        return connection

    async def _run(self, connection: ServedConnection) -> None:
        await connection.drive()
        self.connections.pop(connection.connection_id, None)
        if not connection.websocket and not connection.client_gone:
            self.finished.add(connection.connection_id)
        served = connection.served
        self.outcomes.append(served.diverged())
        summary = served.summarize(connection.what)
        connection.recording.outcome(served.diverged(), summary)
        self.report(summary)

    def _left(self, connection_id: str) -> None:
        """The client ended connection ``connection_id``: its recording can close."""
        recording = self.recordings.pop(connection_id, None)
        if recording is not None:
            recording.client_left()

    def close_recordings(self) -> None:
        """The listener stops: every recording still open ends (replay_recording.py)."""
        for recording in self.recordings.values():
            recording.close()
        self.recordings.clear()
        if self.recording is not None:
            self.recording.stop()

    async def _refused(
        self, scope: Scope, send: Send, status: int, why: str, stream: str
    ) -> None:  # fmt: skip
        """Refuse a request; recorded as an exchange when it names a recorded connection."""
        headers = [(b"content-type", b"application/json")]
        recording = self.recordings.get(_header(scope, CONNECTION_ID) or "")
        if recording is not None:
            recording.answered(recording.exchange(scope, stream), status, headers, ended=True)
        await _refuse(send, status, why)

    def stop_all(self, reason: str) -> None:
        for connection in list(self.connections.values()):
            connection.stop(reason)

    async def wait_all(self, timeout: float) -> None:
        """Wait until every replay still running has ended. Its outcome is said and recorded
        in the same step as its end (``_run`` does not wait in between), before the recordings
        close."""
        with anyio.move_on_after(timeout):
            for connection in list(self.connections.values()):
                await connection.done.wait()

    @property
    def diverged(self) -> bool:
        return not self.outcomes or any(self.outcomes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method = scope["method"]
            if method == "POST":
                await self._post(scope, receive, send)
            elif method == "GET":
                await self._get(scope, receive, send)
            elif method == "DELETE":
                await self._delete(scope, send)
            else:
                await _refuse(send, 405, "method not allowed")
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "lifespan":
            await lifespan(receive, send)

    def _connection(self, scope: Scope) -> tuple[ServedConnection | None, int, str]:
        connection_id = _header(scope, CONNECTION_ID)
        if connection_id is None:
            return None, 400, "missing Acp-Connection-Id"
        connection = self.connections.get(connection_id)
        if connection is None or connection.ended:
            return None, 404, "unknown Acp-Connection-Id"
        return connection, 200, ""

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        content_type = (_header(scope, b"content-type") or "").lower()
        body = await _body(receive)
        if not content_type.startswith("application/json"):
            await self._refused(scope, send, 415, "Content-Type must be application/json", "post")
            return
        value, failure = decode(body)
        if failure is not None:
            await self._refused(scope, send, 400, "the body is not JSON", "post")
            return
        kind, rpc_id, method, _, _ = envelope(value)
        if kind is Kind.BATCH:
            await self._refused(scope, send, 501, "batch requests are not supported", "post")
            return
        if kind is Kind.REQUEST and method == INITIALIZE and _header(scope, CONNECTION_ID) is None:
            await self._initialize(scope, body, rpc_id, send)
            return
        connection, status, why = self._connection(scope)
        if connection is None:
            await self._refused(scope, send, status, why, "post")
            return
        session = _header(scope, SESSION_ID)
        if session is None and session_required(method):
            await self._refused(scope, send, 400, f"missing Acp-Session-Id for {method}", "post")
            return
        recording = connection.recording
        exchange = recording.exchange(scope, "post")
        await recording.message(C2A, body, exchange, "post")
        connection.receive(body, session)
        recording.answered(exchange, 202, ended=True)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def _initialize(self, scope: Scope, body: bytes, rpc_id: JsonId, send: Send) -> None:
        connection = self._open(False, scope)
        recording = connection.recording
        exchange = recording.exchange(scope, "post")
        await recording.message(C2A, body, exchange, "post")
        waiter = connection.wait_for_answer(rpc_id)
        connection.receive(body)
        with anyio.move_on_after(self.timeout):
            await waiter.answered.wait()
        if waiter.answer is None:
            connection.stop("the recording does not answer initialize")
            recording.answered(exchange, 504, ended=True)
            self._left(connection.connection_id)  # no connection was opened for the client
            await _refuse(send, 504, "the recording does not answer initialize")
            return
        headers = [(b"content-type", b"application/json")]
        headers.append((CONNECTION_ID, connection.connection_id.encode()))
        recording.answered(exchange, 200, headers)
        recording.identified(connection.connection_id)
        await recording.message(A2C, waiter.answer, exchange, "post_answer")
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": waiter.answer})
        recording.ended(exchange)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = _header(scope, SESSION_ID)
        stream = "connection_sse" if session is None else "session_sse"
        accept = (_header(scope, b"accept") or "").lower()
        if "text/event-stream" not in accept:
            await self._refused(scope, send, 406, "Accept must include text/event-stream", stream)
            return
        connection, status, why = self._connection(scope)
        if connection is None:
            await self._refused(scope, send, status, why, stream)
            return
        box = connection.stream(session)
        if box.attached:
            await self._refused(scope, send, 409, "this stream has a reader already", stream)
            return
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        recording = connection.recording
        exchange = recording.exchange(scope, stream, 200, headers)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        box.attached = True
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_until_disconnect, receive, tasks.cancel_scope)
                await self._events(box, send, recording, exchange, stream)
                tasks.cancel_scope.cancel()
        finally:
            box.attached = False
            recording.ended(exchange)

    async def _events(
        self, box: Outbox, send: Send, recording: ConnectionRecording, exchange: int, stream: str
    ) -> None:  # fmt: skip
        while True:
            lines = box.take()
            if lines:
                await recording.messages(lines, exchange, stream)
                chunk = b"".join(b"data: " + line + b"\n\n" for line in lines)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                continue
            if box.closed:
                break
            before = anyio.current_time()
            await box.wait(self.keepalive)
            if not box.lines and not box.closed and anyio.current_time() - before >= self.keepalive:
                await send({"type": "http.response.body", "body": KEEPALIVE_COMMENT,
                            "more_body": True})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    async def _delete(self, scope: Scope, send: Send) -> None:
        connection, status, why = self._connection(scope)
        finished = _header(scope, CONNECTION_ID) or ""
        recording = self.recordings.get(finished)
        if connection is None and finished in self.finished:
            self.finished.discard(finished)
        elif connection is None:
            await self._refused(scope, send, status, why, "delete")
            return
        else:
            connection.client_closed()
            connection.stop("the client ended the connection (DELETE)")
        if recording is not None:
            recording.answered(recording.exchange(scope, "delete"), 202, ended=True)
        self._left(finished)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        connection = self._open(True, scope)
        headers = [(CONNECTION_ID, connection.connection_id.encode())]
        recording = connection.recording
        exchange = recording.exchange(scope, "websocket", 101, headers)
        recording.identified(connection.connection_id)
        await send({"type": "websocket.accept", "headers": headers})
        box = connection.streams[None]
        box.attached = True

        async def frames_out(scope: anyio.CancelScope) -> None:
            while True:
                for line in box.take():
                    await recording.message(A2C, line, exchange, "websocket")
                    await send({"type": "websocket.send", "text": line.decode("utf-8", "replace")})
                if box.closed and not box.lines:
                    break
                await box.wait(math.inf)
            with contextlib.suppress(Exception):  # the client may be gone already
                await send({"type": "websocket.close", "code": 1000})
            scope.cancel()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(frames_out, tasks.cancel_scope)
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    connection.client_closed()
                    connection.stop("the client closed the WebSocket")
                    break
                text = message.get("text")
                if message["type"] == "websocket.receive" and text is not None:
                    raw = text.encode()
                    await recording.message(C2A, raw, exchange, "websocket")
                    connection.receive(raw)
            await connection.done.wait()
            tasks.cancel_scope.cancel()
        recording.ended(exchange)
        self._left(connection.connection_id)


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        elif message["type"] == "http.disconnect":
            break
    return b"".join(chunks)


async def _refuse(send: Send, status: int, why: str) -> None:
    body = orjson.dumps({"error": why})
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_GRACE = 5.0  # seconds the replays get to end once a signal stopped them


def serve(listener: Listener, sock: socket.socket) -> int | None:
    """Serve ``listener`` on the listening ``sock`` until a stopping signal; returns it."""
    return anyio.run(_serve, listener, sock)


async def _serve(listener: Listener, sock: socket.socket) -> int | None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    from acp_proxy.remote.serve import CLIENT_KEEP_ALIVE_SECONDS

    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = "-" if os.environ.get("ACP_PROXY_DEBUG_HYPERCORN") else None
    config.graceful_timeout = STOP_GRACE
    config.keep_alive_timeout = CLIENT_KEEP_ALIVE_SECONDS  # record --listen's reason
    received: list[int] = []
    with anyio.open_signal_receiver(*STOPPING) as signals:
        async with anyio.create_task_group() as tasks:
            listener.tasks = tasks

            async def stopped() -> None:
                async for signum in signals:
                    received.append(signum)
                    break
                listener.stop_all(f"ended by {signal.Signals(received[0]).name}")
                await listener.wait_all(STOP_GRACE)

            try:
                await hypercorn.asyncio.serve(
                    listener,  # type: ignore[arg-type]
                    config, shutdown_trigger=stopped, mode="asgi",
                )  # fmt: skip
            finally:
                listener.close_recordings()
            tasks.cancel_scope.cancel()
    return received[0] if received else None
