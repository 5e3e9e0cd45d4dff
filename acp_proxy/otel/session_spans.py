"""Sans-I/O: the span of each session (``acp session``), from the message that opens it or
first names it to ``session/close``.

Rules:
- A session's span starts at the request that opened it (``session/new``, ``load``, ``resume``,
  once it succeeds), or at the first message naming a session never opened here.
- It ends at ``session/close`` (its open turns end with it, unfinished) or at the end of the
  connection. A session opened again after its close is a span of its own; spans of a closed
  session that is not open again hang under the connection.
- It counts its prompt turns (``acp.session.prompts``).
"""

from __future__ import annotations

from acp_proxy.otel.span_tree import SpanTree
from acp_proxy.otel.span_values import INTERNAL, Span, SpanRef
from acp_proxy.otel.turn_spans import TurnSpans

SESSION_SPAN = "acp session"


class SessionSpans:
    def __init__(self, tree: SpanTree, turns: TurnSpans) -> None:
        self._tree = tree
        self._turns = turns
        self.open: dict[str, Span] = {}
        self._closed: set[str] = set()
        self._openings: dict[str, int] = {}
        self._prompts: dict[int, int] = {}  # by session span id

    def session(
        self, session_id: str, start_ns: int, remote: SpanRef | None, opened_by: str | None
    ) -> Span:
        """The session's open span, opened now if it has none (by ``opened_by``, if known)."""
        span = self.open.get(session_id)
        if span is None:
            # A session opened again after its close (``session/load``) is a span of its own.
            opened = self._openings[session_id] = self._openings.get(session_id, 0) + 1
            key = f"session\0{session_id}" + (f"\0{opened}" if opened > 1 else "")
            self._closed.discard(session_id)
            span = self._tree.new_span(
                SESSION_SPAN, self._tree.connection, key, INTERNAL, start_ns,
                {"gen_ai.conversation.id": session_id, "acp.session.id": session_id}, remote,
            )  # fmt: skip
            self.open[session_id] = span
        if opened_by is not None and "acp.session.opened_by" not in span.attributes:
            span.attributes["acp.session.opened_by"] = opened_by
            span.start_ns = min(span.start_ns, start_ns)
        return span

    def seen(self, session_id: str | None, time_ns: int) -> None:
        """A session first seen in a message that does not open it (a session span all the same)."""
        if session_id is not None and session_id not in self._closed:
            self.session(session_id, time_ns, None, None)

    def parent_for(self, session_id: str, time_ns: int) -> Span:
        """The parent for a span of this session (the connection once the session is closed)."""
        if session_id in self._closed:
            return self._tree.connection
        return self.session(session_id, time_ns, None, None)

    def count_prompt(self, session: Span) -> None:
        if session is not self._tree.connection:
            self._prompts[session.span_id] = self._prompts.get(session.span_id, 0) + 1
            session.attributes["acp.session.prompts"] = self._prompts[session.span_id]

    def end(self, session_id: str, end_ns: int, *, unfinished: bool = False) -> None:
        self._turns.end_of_session(session_id, end_ns)
        span = self.open.pop(session_id, None)
        if span is None:
            return
        self._closed.add(session_id)
        if unfinished:
            span.attributes["acp.unfinished"] = True
        self._tree.emit(span, end_ns)

    def end_all(self, end_ns: int) -> None:
        for session_id in list(self.open):
            self.end(session_id, end_ns, unfinished=True)
