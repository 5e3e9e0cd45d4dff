"""Sans-I/O: the recorded client frames of a replay script, and which of them have come.

Rules:
- A live request or notification takes the first unused recorded one of its method whose
  cleaned message matches (exact canonical key, or structurally when the recorded one holds
  redaction placeholders): recorded frames are used in order per key, as in mitmproxy's server
  replay, so a client may send requests in another order than the recorded client did.
- A live answer to an agent request takes the first unused recorded answer with the same id
  (preferring one whose request replay has sent: a scripted client may answer ahead).
- ``prefix`` is the number of leading recorded client frames that have all come: the agent
  frames gated on them may go out. ``when`` keeps the time each one came (for timing).
- Lookups are per method with a moving start, so a long recording stays linear. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from acp_proxy.protocol.jsonrpc import id_key
from acp_proxy.replay.match import Matcher, preview
from acp_proxy.replay.placeholders import Bindings
from acp_proxy.replay.script import ANSWER, OTHER, Expect


class Expectations:
    """Which recorded client frames have come (see module rules)."""

    def __init__(self, expects: Sequence[Expect], now: int) -> None:
        self.expects = expects
        self.consumed = bytearray(len(expects))
        self.prefix = 0
        self.when = [now] * len(expects)
        self._by_method: dict[str | None, list[int]] = {}  # requests and notifications
        self._start: dict[str | None, int] = {}  # entries before it are all used
        self._answers: dict[Any, list[int]] = {}  # by the agent request's recorded id
        for index, expect in enumerate(expects):
            if expect.what == ANSWER:
                self._answers.setdefault(expect.rpc_id, []).append(index)
            elif expect.what != OTHER:
                self._by_method.setdefault(expect.method, []).append(index)

    @property
    def all_came(self) -> bool:
        return self.prefix == len(self.expects)

    def waiting(self) -> Expect | None:
        """The first recorded client frame that has not come yet."""
        return None if self.all_came else self.expects[self.prefix]

    def consume(self, index: int, now: int) -> None:
        self.consumed[index] = 1
        self.when[index] = now
        while self.prefix < len(self.expects) and self.consumed[self.prefix]:
            self.prefix += 1

    def candidates(self, method: str | None, what: str) -> Iterator[int]:
        """Unused recorded requests (or notifications) of ``method``, in recorded order."""
        entries = self._by_method.get(method, [])
        start = self._start.get(method, 0)
        while start < len(entries) and self.consumed[entries[start]]:
            start += 1
        self._start[method] = start
        for index in entries[start:]:
            if not self.consumed[index] and self.expects[index].what == what:
                yield index

    def find(
        self, method: str, what: str, message: Any, bindings: Bindings
    ) -> tuple[int | None, dict[str, str]]:
        """The recorded frame a live one matches, with the placeholders it binds."""
        key = None
        for index in self.candidates(method, what):
            expect = self.expects[index]
            if expect.key is not None:
                key = key if key is not None else Matcher.key(message)
                if expect.key == key:
                    return index, {}
            else:
                bound = bindings.match(expect.message, message)
                if bound is not None:
                    return index, bound
        return None, {}

    def answer_for(self, rpc_id: Any, sent_before: int) -> int | None:
        """The recorded answer to the agent request ``rpc_id``.

        The first unused one whose request has been sent (an Out before ``sent_before``), else
        the first unused one: a scripted client (input from a file) may answer ahead.
        """
        unused = [i for i in self._answers.get(id_key(rpc_id), ()) if not self.consumed[i]]
        for index in unused:
            if 0 <= self.expects[index].request_out < sent_before:
                return index
        return unused[0] if unused else None

    def other(self, line: bytes) -> int | None:
        for index, expect in enumerate(self.expects):
            if expect.what == OTHER and not self.consumed[index] and expect.message == line:
                return index
        return None


def describe(expect: Expect) -> str:
    """A recorded client frame in words, for errors and notes."""
    if expect.what == ANSWER:
        rpc_id = expect.rpc_id[1] if expect.rpc_id else None
        return f"the client's answer to {expect.method} (id {rpc_id!r}, recorded seq {expect.seq})"
    if expect.what == OTHER:
        return f"the line {bytes(expect.message)[:60]!r} (recorded seq {expect.seq})"
    return f"{expect.method} {expect.what} (recorded seq {expect.seq}) {preview(expect.message)}"
