"""Sans-I/O redaction of JSON nested too deep to walk (``protocol.depth.WALK_DEPTH``).

Rules:
- Such a text is never parsed into a tree: its strings are redacted where they stand, one
  token at a time, and everything between them (brackets, numbers, spacing) keeps its bytes.
  The time is linear in the text, whatever its depth.
- Every string, key or value, passes the redactor's detectors (keys as the walk does: those
  longer than five characters). A value under a secret-looking key (``token``, ``apiKey`` ...)
  is replaced whole, and so is every string inside an object or array under such a key. In an
  ``authenticate`` / ``auth/login`` message every string below the top level is replaced but
  ``methodId``'s; with ``drop_contents`` every string value is. So a deep frame loses more
  than a shallow one would (no rule here needs the members beside a value), never less.
- Changed strings are written back as JSON strings, so the text stays valid JSON; the one
  changed path reported is ``$`` (the frame as a whole).
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from acp_proxy.share.secrets import secret_key


class Redactor(Protocol):
    """What this module asks of ``redact.Redactor`` (which imports this module)."""

    def text(self, text: str, path: str = "$") -> str: ...

    def whole(self, kind: str, value: str, path: str) -> str: ...


AUTH_METHODS = frozenset({"authenticate", "auth/login"})
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_COLON = re.compile(rb"[ \t\r\n]*:")


def _encoded(text: str) -> bytes:
    try:
        return json.dumps(text, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape: keep it escaped
        return json.dumps(text).encode()


def redact_deep(
    redactor: Redactor, body: bytes, method: str | None, *, drop_contents: bool
) -> tuple[bytes | None, list[str]]:
    """``body`` with its secrets replaced (None: nothing to change) and the changed paths."""
    out: list[bytes] = []
    kept, depth = 0, 0
    whole_below: int | None = None  # inside a secret key's container: strings go whole
    key: str | None = None  # the member name whose value comes next
    found_any = False
    for match in _TOKEN.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            if whole_below is None and key is not None and secret_key(key):
                whole_below = depth
            depth, key = depth + 1, None
            continue
        if token in (b"]", b"}"):
            depth, key = depth - 1, None
            if whole_below is not None and depth <= whole_below:
                whole_below = None
            continue
        try:
            text = json.loads(token)
        except ValueError:
            continue  # not a JSON string: a reader of the frame sees the bytes as they are
        if _COLON.match(body, match.end()) is not None:
            new = redactor.text(text, "$") if len(text) > 5 else text
            key = text
        else:
            if whole_below is not None or (key is not None and secret_key(key)):
                new = redactor.whole("secret", text, "$")
            elif method in AUTH_METHODS and depth >= 2 and key != "methodId":
                new = redactor.whole("auth", text, "$")
            elif drop_contents:
                new = redactor.whole("content", text, "$")
            else:
                new = redactor.text(text, "$")
            key = None
        if new != text:
            found_any = True
            out += [body[kept : match.start()], _encoded(new)]
            kept = match.end()
    if not found_any:
        return None, []
    return b"".join([*out, body[kept:]]), ["$"]
