"""Sans-I/O: what a client message is compared on when replay matches it to a recorded one.

Rules:
- A request or notification is compared on its method and its params, a client's answer to an
  agent request on its ``result`` or ``error``; never on the JSON-RPC id.
- Before comparing, both sides are cleaned the same way: ``_meta`` (at any depth), the
  volatile fields ``cwd`` and ``additionalDirectories`` (at any depth: they name folders of the
  machine the client runs on) are removed; timestamps (normalize.TIME_KEYS) become ``<time>``;
  then every ``--ignore`` JSONPath is removed from the message ``{"method", "params"}`` (or
  ``{"result"}`` / ``{"error"}``), as ``diff --ignore`` does (normalize.py).
- ``$/cancel_request`` names a request by the client's id; the caller maps that id to the
  recorded request's id first, so a cancel matches whatever ids the client uses.
- Session, message and tool-call ids are compared as they are: replay sends the recorded ones,
  and a client that behaves like the recorded one sends them back.
- ``Matcher.key`` is canonical JSON (sorted keys), so equal messages give equal keys; recorded
  messages holding redaction placeholders are matched structurally (placeholders.py).
- Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_proxy.protocol.normalize import TIME_KEYS, Segment, canonical, parse_path, remove

VOLATILE_KEYS = frozenset({"_meta", "cwd", "additionalDirectories"})
PREVIEW = 160


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: "<time>" if key in TIME_KEYS and item is not None else _clean(item)
            for key, item in value.items()
            if key not in VOLATILE_KEYS
        }
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


class Matcher:
    """Cleans messages for comparison (see module rules); one per replay."""

    __slots__ = ("_ignore",)

    def __init__(self, ignore: Sequence[str] = ()) -> None:
        self._ignore: list[tuple[Segment, ...]] = [parse_path(p) for p in ignore]

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """The comparable form of a request or notification."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = _clean(params)
        return self._without_ignored(message)

    def answer(self, member: str, payload: Any) -> dict[str, Any]:
        """The comparable form of a response (``member`` is ``result`` or ``error``)."""
        return self._without_ignored({member: _clean(payload)})

    def _without_ignored(self, message: dict[str, Any]) -> dict[str, Any]:
        for path in self._ignore:
            remove(message, path)
        return message

    @staticmethod
    def key(message: dict[str, Any]) -> bytes:
        return canonical(message)


def preview(message: Any) -> str:
    """A short one-line rendering of a comparable message, for error texts."""
    text = canonical(message).decode(errors="replace")
    return text if len(text) <= PREVIEW else text[: PREVIEW - 3] + "..."
