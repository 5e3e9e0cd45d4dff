"""Sans-I/O: ACP messages with their run-specific values replaced, so two runs can be compared.

Rules:
- One ``Normalizer`` per conversation, fed its messages in timeline order. The same input
  always gives the same output, whatever the values were in the run:
  - JSON-RPC ids become ``#client-N`` / ``#agent-N``: numbered per sending side in order of
    first use; a response (and a ``$/cancel_request``'s ``requestId``) gets its request's;
  - ids that peers mint (``sessionId``, ``messageId``, ``toolCallId``, ``terminalId``,
    ``compactionId``, ``planId``, ``elicitationId``, and ``senderSessionId`` /
    ``recipientSessionId`` / ``parentSessionId``) become ``<session-N>``, ``<message-N>`` ...,
    numbered in order of first appearance, wherever they occur in the message;
  - timestamps (``updatedAt``, ``createdAt``, ``timestamp``, ``startedAt``, ``endedAt``) become
    ``<time>``; W3C trace context in ``_meta`` (``traceparent``, ``tracestate``, ``baggage``)
    becomes ``<trace>``.
- Everything else is kept, values and key order alike; ``canonical`` sorts keys for comparing.
- ``--ignore`` paths use a JSONPath subset: ``$.a.b``, ``$.a[0]``, ``$.a[*].b``, ``$..b``,
  ``$['a b']``; matched members are removed after normalization.
- Peer input never raises: values of unexpected types are kept as they are.
- Reused by replay to match requests: keep it free of I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

ID_KEYS = {
    "sessionId": "session", "senderSessionId": "session", "recipientSessionId": "session",
    "parentSessionId": "session", "messageId": "message", "toolCallId": "tool",
    "terminalId": "terminal", "compactionId": "compaction", "planId": "plan",
    "elicitationId": "elicitation",
}  # fmt: skip
TIME_KEYS = frozenset({"updatedAt", "createdAt", "timestamp", "startedAt", "endedAt"})
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})
_SEGMENT = re.compile(
    r"\.\.([A-Za-z_$][\w$/-]*)|\.([A-Za-z_$][\w$/-]*|\*)|\[(\d+|\*)\]|\['([^']*)'\]"
)

Segment = tuple[str, str | int]  # ("key", name) | ("index", n) | ("any", "*") | ("deep", name)


def parse_path(path: str) -> tuple[Segment, ...]:
    """Parse a JSONPath subset; raises ``ValueError`` naming the path when it is not one."""
    if not path.startswith("$"):
        raise ValueError(f"JSONPath {path!r} must start with $")
    segments: list[Segment] = []
    position = 1
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if match is None:
            raise ValueError(f"cannot read JSONPath {path!r} at {path[position:]!r}")
        deep, key, index, quoted = match.groups()
        if deep is not None:
            segments.append(("deep", deep))
        elif key == "*" or index == "*":
            segments.append(("any", "*"))
        elif index is not None:
            segments.append(("index", int(index)))
        else:
            segments.append(("key", key if key is not None else quoted))
        position = match.end()
    if not segments:
        raise ValueError(f"JSONPath {path!r} names the whole message")
    return tuple(segments)


def remove(value: Any, segments: Sequence[Segment]) -> None:
    """Remove, in place, every member of ``value`` that ``segments`` match."""
    head, rest = segments[0], segments[1:]
    kind, name = head
    children: list[tuple[Any, Any]] = []  # (container, key)
    if kind == "deep":
        _deep(value, name, rest)
        return
    if isinstance(value, dict):
        keys = list(value) if kind == "any" else [name] if name in value else []
        children = [(value, k) for k in keys]
    elif isinstance(value, list):
        if kind == "any":
            children = [(value, i) for i in range(len(value))]
        elif kind == "index" and isinstance(name, int) and name < len(value):
            children = [(value, name)]
    for container, key in reversed(children):
        if rest:
            remove(container[key], rest)
        else:
            del container[key]


def _deep(value: Any, name: str | int, rest: Sequence[Segment]) -> None:
    if isinstance(value, dict):
        if name in value:
            if rest:
                remove(value[name], rest)
            else:
                del value[name]
        for child in list(value.values()):
            _deep(child, name, rest)
    elif isinstance(value, list):
        for child in value:
            _deep(child, name, rest)


class Normalizer:
    """Normalizes the messages of one conversation, in order (see the module rules)."""

    def __init__(self, ignore: Sequence[str] = ()) -> None:
        self._ignore = [parse_path(p) for p in ignore]
        self._rpc: dict[str, dict[tuple[str, Any], str]] = {"client": {}, "agent": {}}
        self._ids: dict[tuple[str, Any], str] = {}
        self._counts: dict[str, int] = {}

    def _minted(self, namespace: str, value: Any) -> str:
        key = (namespace, value)
        found = self._ids.get(key)
        if found is None:
            self._counts[namespace] = self._counts.get(namespace, 0) + 1
            found = self._ids[key] = f"<{namespace}-{self._counts[namespace]}>"
        return found

    def _rpc_id(self, side: str, value: Any) -> str:
        ids = self._rpc[side]
        key = (type(value).__name__, value)
        if key not in ids:
            ids[key] = f"#{side}-{len(ids) + 1}"
        return ids[key]

    def message(self, sender: str, value: Any) -> Any:
        """The normalized copy of one message (or batch) sent by ``sender`` (client or agent)."""
        if isinstance(value, list):
            result: Any = [self._entry(sender, entry) for entry in value]
        else:
            result = self._entry(sender, value)
        for path in self._ignore:
            remove(result, path)
        return result

    def _entry(self, sender: str, entry: Any) -> Any:
        if not isinstance(entry, dict):
            return entry
        other = "agent" if sender == "client" else "client"
        out = self._walk(entry)
        if "id" in entry and isinstance(entry["id"], str | int | float):
            owner = sender if "method" in entry else other
            out["id"] = self._rpc_id(owner, entry["id"])
        params = entry.get("params")
        if entry.get("method") == "$/cancel_request" and isinstance(params, dict):
            target = params.get("requestId")
            if isinstance(target, str | int | float):
                out["params"]["requestId"] = self._rpc_id(sender, target)
        return out

    def _walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key in ID_KEYS and isinstance(item, str | int):
                    out[key] = self._minted(ID_KEYS[key], item)
                elif key in TIME_KEYS and item is not None:
                    out[key] = "<time>"
                elif key == "_meta" and isinstance(item, dict):
                    meta = self._walk(item)
                    out[key] = {k: "<trace>" if k in TRACE_KEYS else v for k, v in meta.items()}
                else:
                    out[key] = self._walk(item)
            return out
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        return value


def canonical(value: Any) -> bytes:
    """Compact JSON with sorted keys: equal values give equal bytes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # integers past 64 bits (the standard parser reads them)
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
