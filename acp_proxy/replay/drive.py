"""Sans-I/O: a recording's client side played against a live agent (``replay --to-agent``).

Rules:
- Only protocol frames (``c2a``, ``a2c``) take part, in recorded ``seq`` order. A recorded
  client frame is sent once every agent frame recorded before it has been received and matched;
  agent frames are expected one at a time, in their recorded order (each side's own order does
  not depend on timing, as in diffing.py).
- An agent frame matches its recorded one when both, normalized as ``diff`` does
  (normalize.Normalizer: JSON-RPC ids, minted ids, timestamps, trace context, ``--ignore``
  paths), give the same canonical JSON; frames that are not JSON compare by their bytes. A
  recorded frame holding redaction placeholders matches structurally (placeholders.py),
  and the live text each placeholder stood for is put back into later client frames.
- Client frames go out as recorded with three rewrites: the id of an answer to an agent request
  becomes the live request's id; ids the agent minted (``sessionId``, ``toolCallId`` ...,
  normalize.ID_KEYS) become the live agent's values (replay.values.ValueMap, learned from the
  matching frames); bound placeholders become their live text.
  An unchanged frame keeps its recorded bytes.
- The first divergence ends the drive: a differing frame, a frame the recording does not have,
  the agent's output ending early, or a timeout (the I/O shell says when).
- Pure: frames in, bytes and a verdict out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.plural import counted
from acp_proxy.protocol.diffing import first_difference
from acp_proxy.protocol.jsonrpc import NOT_JSON, parse_json
from acp_proxy.protocol.normalize import Normalizer, canonical
from acp_proxy.protocol.observer import FrameLike
from acp_proxy.replay.placeholders import Bindings, has_placeholder
from acp_proxy.replay.values import ValueMap

CONTEXT = 3


@dataclass(frozen=True, slots=True)
class Divergence:
    reason: str
    seq: int | None  # the recorded agent frame expected (None: the recording had no more)
    expected: str | None  # normalized recorded frame (canonical JSON, or bytes as text)
    actual: str | None  # normalized live frame
    path: str | None  # first differing JSON path, when both are JSON
    context: tuple[str, ...]  # the frames before it, "client: ..." / "agent: ..."


def _text(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8", "backslashreplace")


class Drive:
    """The client side of one recorded connection (see the module rules)."""

    def __init__(self, frames: Iterable[FrameLike], ignore: Sequence[str] = ()) -> None:
        self._rows = [f for f in frames if f.direction in ("c2a", "a2c")]
        self._next = 0
        self._recorded = Normalizer(ignore)
        self._live = Normalizer(ignore)
        self.values = ValueMap()  # recorded minted ids and agent request ids -> live ones
        self.bindings = Bindings()
        self._context: deque[str] = deque(maxlen=CONTEXT)
        self.divergence: Divergence | None = None
        self.sent = 0
        self.matched = 0
        self.expected_total = sum(f.direction == "a2c" for f in self._rows)

    @property
    def done(self) -> bool:
        """True once every recorded frame was sent or matched, or the agent diverged."""
        return self.divergence is not None or self._next >= len(self._rows)

    @property
    def expected(self) -> FrameLike | None:
        """The recorded agent frame waited for (None when nothing is waited for)."""
        if self.done:
            return None
        row = self._rows[self._next]
        return row if row.direction == "a2c" else None

    def outgoing(self) -> bytes:
        """The client frames that are due now, as bytes to write to the agent."""
        out: list[bytes] = []
        while not self.done and self._rows[self._next].direction == "c2a":
            out.append(self._client_frame(bytes(self._rows[self._next].raw)))
            self._next += 1
            self.sent += 1
        return b"".join(out)

    def receive(self, raw: bytes) -> None:
        """One frame the live agent sent (a line, newline included)."""
        if self.divergence is not None:
            return
        live = parse_json(raw)
        actual = self._agent_text(self._live, live, raw)
        row = self.expected
        if row is None:
            self._diverge("the agent sent a frame the recording does not have", None, None, actual)
            return
        raw_recorded = bytes(row.raw)  # no copy: the rows hold bytes
        recorded = parse_json(raw_recorded)
        expected = self._agent_text(self._recorded, recorded, raw_recorded)
        if not self._same(recorded, live, expected, actual):
            path = None
            if recorded is not NOT_JSON and live is not NOT_JSON:
                path = first_difference(orjson.loads(expected), orjson.loads(actual))
            where = f", differs at {path}" if path else ""
            self._diverge(f"the agent's frame differs from the recording{where}", row.seq,
                          expected, actual, path)  # fmt: skip
            return
        self._learn(recorded, live)
        self._context.append(f"agent: {actual}")
        self._next += 1
        self.matched += 1

    def agent_closed(self) -> None:
        """The agent's output ended (it exited or closed stdout)."""
        row = self.expected
        if row is not None:
            expected = self._agent_text(self._recorded, parse_json(bytes(row.raw)), bytes(row.raw))
            self._diverge("the agent's output ended before this frame", row.seq, expected, None)

    def timed_out(self, seconds: float) -> None:
        """Nothing came from the agent for ``seconds`` while a frame was expected."""
        row = self.expected
        if row is not None:
            expected = self._agent_text(self._recorded, parse_json(bytes(row.raw)), bytes(row.raw))
            reason = f"timed out after {seconds:g}s waiting for this frame from the agent"
            self._diverge(reason, row.seq, expected, None)

    def _agent_text(self, normalizer: Normalizer, value: Any, raw: bytes) -> str:
        if value is NOT_JSON:
            return _text(raw)
        return canonical(normalizer.message("agent", value)).decode()

    def _same(self, recorded: Any, live: Any, expected: str, actual: str) -> bool:
        if expected == actual:
            return True
        if recorded is NOT_JSON or live is NOT_JSON:
            return False
        recorded_value = orjson.loads(expected)
        if not has_placeholder(recorded_value):
            return False
        found = self.bindings.match(recorded_value, orjson.loads(actual))
        if found is None:
            return False
        self.bindings.bind(found)
        return True

    def _learn(self, recorded: Any, live: Any) -> None:
        """Ids the agent minted, and its request's live id, from a matching frame pair."""
        self.values.learn(recorded, live)

    def _client_frame(self, raw: bytes) -> bytes:
        raw = self.bindings.substitute(raw)
        if not raw.endswith(b"\n"):
            raw += b"\n"
        value = parse_json(raw)
        if value is NOT_JSON:
            self._context.append(f"client: {_text(raw)}")
            return raw
        sent = self.values.to_peer(value)
        self._recorded.message("client", value)
        normalized = self._live.message("client", sent)
        self._context.append(f"client: {canonical(normalized).decode()}")
        return raw if sent == value else orjson.dumps(sent) + b"\n"

    def _diverge(
        self, reason: str, seq: int | None, expected: str | None, actual: str | None,
        path: str | None = None,
    ) -> None:  # fmt: skip
        self.divergence = Divergence(reason, seq, expected, actual, path, tuple(self._context))


def report(drive: Drive, what: str) -> str:
    """The closing words: a one-line summary, and the divergence with its context."""
    head = (
        f"replay --to-agent of {what}: sent {counted(drive.sent, 'client frame')}, matched "
        f"{drive.matched} of {counted(drive.expected_total, 'agent frame')}."
    )
    found = drive.divergence
    if found is None:
        return f"{head} No divergence."
    where = f"recorded seq {found.seq}" if found.seq is not None else "after the recording"
    frame = drive.matched + 1
    lines = [f"{head} The agent diverged at its frame {frame} ({where}): {found.reason}"]
    if found.context:
        lines.append("  before it:")
        lines += [f"    {entry}" for entry in found.context]
    lines.append(f"  expected (recorded, normalized): {found.expected or '(nothing)'}")
    lines.append(f"  actual (normalized):             {found.actual or '(nothing)'}")
    return "\n".join(lines)
