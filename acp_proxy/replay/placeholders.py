"""Sans-I/O: redaction placeholders in a recording, matched against what a live client sends.

Rules:
- A placeholder is ``[redacted:KIND:N]`` (``PLACEHOLDER``): redaction (share/redact.py) writes
  one in place of the sensitive part of a recorded string, e.g. ``/home/[redacted:user:1]/proj``.
- Matching a recorded value against a live one is structural (objects by key, arrays by
  position, scalars by type and value). A recorded string holding placeholders is compiled into
  a pattern: literal text matches itself, each placeholder matches any text (possibly empty),
  the same placeholder twice matches the same text, and a placeholder already bound matches
  only its bound text. A successful match binds every new placeholder to the live text it
  captured; bindings only grow, and the first binding of a placeholder is final.
- ``substitute`` puts bound text back into recorded bytes (agent frames) in place of its
  placeholder, escaped for a JSON string, so the client gets its own data back. Unbound
  placeholders stay as recorded. Placeholders are plain ASCII that JSON never escapes, so they
  are found in the raw bytes directly.
- Pure and deterministic: no I/O, no clock.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

PLACEHOLDER = re.compile(r"\[redacted:[a-z0-9-]+:[0-9]+\]")
_PLACEHOLDER_BYTES = re.compile(rb"\[redacted:[a-z0-9-]+:[0-9]+\]")
_MARK = b"[redacted:"


def has_placeholder(value: Any) -> bool:
    """Whether any string in ``value`` (keys excluded) holds a placeholder."""
    if isinstance(value, str):
        return "[redacted:" in value and PLACEHOLDER.search(value) is not None
    if isinstance(value, dict):
        return any(has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(has_placeholder(v) for v in value)
    return False


class Bindings:
    """What each placeholder stands for in the live conversation (see the module rules)."""

    __slots__ = ("_escaped", "values")

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self._escaped: dict[bytes, bytes] = {}

    def match(self, recorded: Any, live: Any) -> dict[str, str] | None:
        """The new bindings under which ``live`` matches ``recorded``, or None if it does not.

        Nothing is bound until ``bind`` is called with the result.
        """
        found: dict[str, str] = {}
        return found if self._match(recorded, live, found) else None

    def bind(self, new: dict[str, str]) -> None:
        for name, text in new.items():
            if name not in self.values:
                self.values[name] = text
                self._escaped[name.encode()] = orjson.dumps(text)[1:-1]

    def substitute(self, raw: bytes) -> bytes:
        """``raw`` with every bound placeholder replaced by its JSON-escaped live text."""
        if not self._escaped or _MARK not in raw:
            return raw
        escaped = self._escaped
        return _PLACEHOLDER_BYTES.sub(lambda m: escaped.get(m.group(), m.group()), raw)

    def _match(self, recorded: Any, live: Any, found: dict[str, str]) -> bool:
        if isinstance(recorded, str):
            if not isinstance(live, str):
                return False
            if "[redacted:" not in recorded:
                return recorded == live
            return self._match_string(recorded, live, found)
        if isinstance(recorded, dict):
            if not isinstance(live, dict) or recorded.keys() != live.keys():
                return False
            return all(self._match(v, live[k], found) for k, v in recorded.items())
        if isinstance(recorded, list):
            if not isinstance(live, list) or len(recorded) != len(live):
                return False
            return all(self._match(r, x, found) for r, x in zip(recorded, live, strict=True))
        return type(recorded) is type(live) and recorded == live

    def _match_string(self, recorded: str, live: str, found: dict[str, str]) -> bool:
        groups: dict[str, str] = {}  # placeholder -> group name
        parts: list[str] = []
        position = 0
        for hit in PLACEHOLDER.finditer(recorded):
            parts.append(re.escape(recorded[position : hit.start()]))
            name = hit.group()
            known = self.values.get(name, found.get(name))
            if known is not None:
                parts.append(re.escape(known))
            elif name in groups:
                parts.append(f"(?P={groups[name]})")
            else:
                groups[name] = f"p{len(groups)}"
                parts.append(f"(?P<{groups[name]}>.*)")
            position = hit.end()
        parts.append(re.escape(recorded[position:]))
        hit_live = re.fullmatch("".join(parts), live, re.DOTALL)
        if hit_live is None:
            return False
        for name, group in groups.items():
            found[name] = hit_live.group(group)
        return True
