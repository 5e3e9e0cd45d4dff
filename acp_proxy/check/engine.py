"""Sans-I/O rule engine: checks one connection's frames, in order, against the ACP rules.

Rules:
- Streaming: ``Checker.observe(record)`` takes each ``FrameRecord`` of one connection in
  ``seq`` order (live from the recorder, or read back from a recording) and returns the
  findings it caused; ``finish()`` ends the connection and returns what only the end can tell
  (unanswered requests, turns that never ended ...). A finding never waits for the end when
  the frame alone shows it.
- Peer input never raises: frames that are not JSON-RPC become findings of the framing rules.
- Every rule has a stable id (``ACP001`` ... ``ACP035`` follow the numbering of section 8 of the
  spec digest, ``ACP000`` is schema validation, ``REC001`` the recording's own losses,
  ``TRN001``... the remote transport's rules, read from how a remote connection was carried), a
  severity (``error`` for MUST, ``warning`` for SHOULD and reserved values), a one-line
  summary, its spec source and the fix. The rules live in ``check/rules/``; this module
  dispatches frames to the rules that asked for them (by method and update kind), so a
  chunk-heavy recording stays fast.
- What a frame means comes from the observer (protocol/observer.py), run here over each frame's
  bytes: the same verdict as the stored columns, batch entries included. The rules never
  classify or correlate frames themselves.
- Shared connection facts (negotiated version, capabilities, replay windows) are kept here and
  updated after the rules have seen each message, so a rule sees the state *before* the message
  it is looking at; the pending requests are the observer's (see check/base.py).
- This module knows no process, clock or database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from acp_proxy.check.base import (
    DISABLED_BY_DEFAULT,
    Context,
    Event,
    Finding,
    Losses,
    Rule,
    RuleInfo,
    Transport,
)
from acp_proxy.check.rules.framing import FRAMING_RULES
from acp_proxy.check.rules.lifecycle import LIFECYCLE_RULES
from acp_proxy.check.rules.recording import RECORDING_RULES
from acp_proxy.check.rules.replay import REPLAY_RULES
from acp_proxy.check.rules.session import SESSION_RULES
from acp_proxy.check.rules.transport import TRANSPORT_RULES
from acp_proxy.check.rules.updates import UPDATE_RULES
from acp_proxy.check.schemas import SchemaBook
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord

__all__ = ["RULES", "Checker", "Finding", "Losses", "RuleInfo", "rule_ids", "select_rules"]

RULE_CLASSES: tuple[type[Rule], ...] = (
    *FRAMING_RULES, *SESSION_RULES, *LIFECYCLE_RULES, *UPDATE_RULES, *REPLAY_RULES,
    *RECORDING_RULES, *TRANSPORT_RULES,
)  # fmt: skip
RULES: tuple[RuleInfo, ...] = tuple(sorted((c.info for c in RULE_CLASSES), key=lambda i: i.id))
_JSONRPC_KINDS = frozenset({"request", "notification", "response", "error", "batch"})
_MESSAGE_KINDS = frozenset({"request", "notification", "response", "error"})


def rule_ids() -> list[str]:
    return [info.id for info in RULES]


def select_rules(select: Sequence[str] = (), ignore: Sequence[str] = ()) -> frozenset[str]:
    """The rule ids to run: ``select`` (default: all but the disabled ones) minus ``ignore``.

    Ids are matched case-insensitively and by prefix (``ACP02`` selects ACP020-ACP029); a
    rule disabled by default (ACP035) runs only when named in full.
    Raises ``ValueError`` naming a pattern that matches no rule.
    """
    known = rule_ids()

    def expand(patterns: Sequence[str]) -> set[str]:
        chosen: set[str] = set()
        for pattern in patterns:
            wanted = pattern.strip().upper()
            matched = {i for i in known if i == wanted} or {
                i for i in known if i.startswith(wanted) and i not in DISABLED_BY_DEFAULT
            }
            if not matched:
                raise ValueError(f"no rule matches {pattern!r} (rules: ACP000-ACP035, REC001)")
            chosen |= matched
        return chosen

    base = expand(select) if select else set(known) - DISABLED_BY_DEFAULT
    return frozenset(base - expand(ignore))


class Checker:
    """Checks one connection. Feed every frame in order, then call ``finish()`` once."""

    def __init__(
        self,
        schemas: SchemaBook | None = None,
        *,
        rules: Iterable[str] | None = None,
        protocol_version: int | None = None,
        connection_id: int | None = None,
        losses: Losses | None = None,
    ) -> None:
        enabled = frozenset(rules) if rules is not None else select_rules()
        self.context = Context(schemas, protocol_version, connection_id, losses)
        self._observer = ConnectionObserver()
        self.context.state.pending = self._observer.pending
        self._rules = [cls(self.context) for cls in RULE_CLASSES if cls.info.id in enabled]
        self._frame_rules = [r for r in self._rules if r.wants_frames]
        self._dispatch: dict[tuple[str, str | None, str | None], list[Rule]] = {}
        self._finished = False

    def _handlers(self, event: Event) -> list[Rule]:
        key = (event.kind, event.method, event.update_kind)
        handlers = self._dispatch.get(key)
        if handlers is None:
            handlers = self._dispatch[key] = [r for r in self._rules if r.wants(event)]
        return handlers

    def observe(self, record: FrameRecord) -> list[Finding]:
        """Check one frame; returns the findings it caused (often none)."""
        context = self.context
        context.findings = []
        context.record = record
        if record.direction in ("c2a", "a2c"):
            reading = self._observer.read(record.seq, record.direction, record.raw)
            value = reading.value if reading.kind in _JSONRPC_KINDS else None
            for rule in self._frame_rules:
                rule.frame(record, value)
            if value is not None:
                for event in reading.events:
                    if event.kind in _MESSAGE_KINDS:
                        for rule in self._handlers(event):
                            rule.message(event)
                        context.state.after(event)
        return context.findings

    def finish(
        self, losses: Losses | None = None, transport: Transport | None = None
    ) -> list[Finding]:
        """End of the connection: findings only the end can tell. Call once.

        ``losses``, when given, are the recording's losses as they stand at the end (they
        replace those given at the start: a live recording's losses grow); ``transport``, how
        a remote connection was carried (the transport rules read it).
        """
        if self._finished:
            return []
        self._finished = True
        if losses is not None:
            self.context.losses = losses
        if transport is not None:
            self.context.transport = transport
        self.context.findings = []
        for rule in self._rules:
            rule.finish()
        return self.context.findings
