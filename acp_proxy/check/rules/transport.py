"""Sans-I/O rules of ACP's remote transport (Streamable HTTP and WebSocket): TRN001-TRN003.

Rules:
- They read how a remote connection was carried (``Context.transport``: its HTTP exchanges and,
  per frame, the exchange and stream it crossed on, docs/recording-format.md format 8), given
  when the check finishes; a stdio connection, or a live check, has none and they find nothing.
- The messages are the observer's events, remembered by ``seq`` while the frames go by (only
  when the caller said the connection is remote: ``Context.remote``); a response's session is
  its request's.
- The facts are the transport RFD's ("Streamable HTTP & WebSocket Transport"): the initialize
  answer names the connection (``Acp-Connection-Id``), a session-scoped POST names its session
  (``Acp-Session-Id``), and each message crosses where its kind belongs.
- Peer values of unexpected types are treated as absent; a frame without a transport row (a
  recording cut short) is skipped.
"""

from __future__ import annotations

from typing import NamedTuple

from acp_proxy.check.base import ERROR, Context, Event, Exchange, Rule, RuleInfo, Transport
from acp_proxy.protocol import acp

RFD = "RFD streamable-http-websocket-transport"
SESSION_SCOPED = frozenset(
    {"session/prompt", "session/cancel", "session/set_mode", "session/set_config_option",
     "session/close"}
)  # fmt: skip
CLIENT_STREAMS = frozenset({"post", "websocket"})
AGENT_STREAMS = frozenset({"post_answer", "connection_sse", "session_sse", "websocket"})
CONNECTION_ID = "acp-connection-id"


class Seen(NamedTuple):
    direction: str
    kind: str
    method: str | None  # a response's is its request's
    session: str | None  # a response's is its request's


class _TransportRule(Rule):
    """Remembers every message by seq; checks them at the end against the transport."""

    kinds = None
    methods = None

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.seen: dict[int, Seen] = {}

    def message(self, event: Event) -> None:
        if not self.context.remote or event.seq is None or event.seq in self.seen:
            return  # a batch's later entries share its frame
        request = event.request
        method = event.method if request is None else request.method
        session = event.session_id if request is None else request.session_id
        self.seen[event.seq] = Seen(str(event.direction), str(event.kind), method, session)

    def finish(self) -> None:
        transport = self.context.transport
        if transport is not None:
            self.judge(transport)

    def judge(self, transport: Transport) -> None:
        raise NotImplementedError

    def crossed(self, transport: Transport, seq: int) -> tuple[Exchange | None, str | None]:
        where = transport.frames.get(seq)
        if where is None:
            return None, None
        return transport.exchanges.get(where[0]), where[1]


class ConnectionIdOnInitialize(_TransportRule):
    info = RuleInfo(
        "TRN001", ERROR, "The initialize answer carries Acp-Connection-Id",
        f"{RFD} (Connection Initialization; WebSocket: Connection Establishment)",
        "Answer the initialize POST with 200 and an Acp-Connection-Id header (for WebSocket, "
        "put the header on the 101 upgrade response): the client needs it on every later "
        "request.",
    )  # fmt: skip

    def judge(self, transport: Transport) -> None:
        for seq, seen in self.seen.items():
            if seen.method != acp.INITIALIZE or seen.direction != "a2c" or seen.kind == "request":
                continue
            exchange, _ = self.crossed(transport, seq)
            if exchange is None:
                continue
            if CONNECTION_ID not in exchange.answer_headers:
                what = "WebSocket upgrade" if exchange.stream == "websocket" else "initialize POST"
                self.report(seq, "a2c", f"the answer to the {what} (exchange {exchange.seq}) has "
                            "no Acp-Connection-Id header")  # fmt: skip


class SessionIdOnSessionPost(_TransportRule):
    info = RuleInfo(
        "TRN002", ERROR, "A session-scoped POST carries Acp-Session-Id, naming its session",
        f"{RFD} (Identity Model; Content Negotiation and Validation)",
        "Send Acp-Session-Id with the message's sessionId on every POST of session/prompt, "
        "session/cancel, session/set_mode, session/set_config_option and session/close.",
    )  # fmt: skip

    def judge(self, transport: Transport) -> None:
        for seq, seen in self.seen.items():
            if seen.direction != "c2a" or seen.kind in {"response", "error"}:
                continue
            exchange, stream = self.crossed(transport, seq)
            if exchange is None or stream != "post":
                continue
            header = exchange.acp_session_id
            if seen.method in SESSION_SCOPED and header is None:
                self.report(seq, "c2a", f"the POST of {seen.method} (exchange {exchange.seq}) "
                            "has no Acp-Session-Id header")  # fmt: skip
            elif header is not None and seen.session is not None and header != seen.session:
                self.report(seq, "c2a", f"the POST of {seen.method} names session {header!r} "
                            f"in Acp-Session-Id, its message {seen.session!r}")  # fmt: skip


class MessageOnItsStream(_TransportRule):
    info = RuleInfo(
        "TRN003", ERROR, "Each message crosses on the stream its kind belongs to",
        f"{RFD} (Unified Endpoint Routing; Streamable HTTP Message Flow)",
        "Client messages go in POST bodies; the agent answers initialize in the POST's body "
        "and sends everything else on an event stream, a session's messages on that session's "
        "stream or the connection's.",
    )  # fmt: skip

    def judge(self, transport: Transport) -> None:
        for seq, seen in self.seen.items():
            exchange, stream = self.crossed(transport, seq)
            if exchange is None or stream is None:
                continue
            problem = self._problem(seen, stream, exchange)
            if problem is not None:
                self.report(seq, seen.direction, problem)

    def _problem(self, seen: Seen, stream: str, exchange: Exchange) -> str | None:
        allowed = CLIENT_STREAMS if seen.direction == "c2a" else AGENT_STREAMS
        what = seen.method or seen.kind
        if stream not in allowed:
            return f"a {seen.direction} message ({what}) crossed on {stream}"
        if stream == "websocket":
            return None
        initialize_answer = seen.method == acp.INITIALIZE and seen.kind != "request"
        if stream == "post_answer" and not initialize_answer:
            return f"{what} came as a POST's answer body: only initialize is answered there"
        if initialize_answer and stream != "post_answer":
            return f"the initialize answer came on {stream}, not as the POST's answer body"
        wanted = exchange.acp_session_id
        if (
            stream == "session_sse"
            and None not in (seen.session, wanted)
            and seen.session != wanted
        ):
            return f"{what} for session {seen.session!r} came on the stream of {wanted!r}"
        return None


TRANSPORT_RULES: tuple[type[Rule], ...] = (
    ConnectionIdOnInitialize, SessionIdOnSessionPost, MessageOnItsStream,
)  # fmt: skip
