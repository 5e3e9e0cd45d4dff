"""Sans-I/O redaction of recorded frames and connection rows, keeping them replayable.

Rules:
- Each distinct secret value gets one placeholder, ``[redacted:KIND:N]`` (KIND lowercase
  ``[a-z0-9-]``, N counting from 1 per kind in order of first appearance): the same value gets
  the same placeholder everywhere, so a replay engine can treat a placeholder in a client
  request as "any live text" and put the live value back into later agent frames.
- A frame is parsed and walked only when its bytes hold a trigger of some rule; only changed
  frames are serialized again (compact JSON, same line ending): the others keep their exact
  bytes. Non-JSON lines are redacted as text (bytes that are not UTF-8 stay as they were).
- What is redacted: every string a ``secrets.Finder`` detector matches (in the frame's bytes
  and in every text column of its row, changed bytes or not); every string under a
  member whose key looks secret (``apiKey``, ``token``, ``password`` ...); ``env`` and
  ``headers`` entries whose name looks secret; every parameter of ``authenticate`` /
  ``auth/login`` but ``methodId``; base64 terminal output is decoded, redacted and encoded
  again. With ``drop_contents``: file contents (``fs/read_text_file`` results,
  ``fs/write_text_file`` content, embedded resources, diffs), terminal output, image and audio
  data become ``[redacted:content:N]`` (base64-encoded where base64), keeping the JSON shape.
- Changed fields come back as JSON paths (``$.params.prompt[0].text``; ``$``: a whole non-JSON
  line). The value -> placeholder map stays in memory (``Redactor.mapping``).
- ``detect_only``: nothing is replaced, every hit is collected (verify.py).
- JSON nested deeper than ``protocol.depth.WALK_DEPTH`` (a frame, a connection's JSON column)
  is never walked: deep_redaction.py redacts its strings where they stand, more strictly.
- This module knows no process, file, clock or database.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.protocol.depth import too_deep
from acp_proxy.share.deep_redaction import AUTH_METHODS, redact_deep
from acp_proxy.share.secrets import PLACEHOLDER, Finder, Found, secret_key, secret_name

TEXT_COLUMNS = ("method", "session_id", "message_id", "tool_call_id", "update_kind", "stop_reason")
CONNECTION_TEXT = ("label", "cwd", "error")
CONNECTION_JSON = ("argv", "client_argv", "client_info", "agent_info")
_STRUCTURAL = re.compile(  # lower-case bytes that a structural rule's frame must contain
    rb'key|token|secret|pass|auth|cookie|credential|"env"|"headers"|terminal_'
)
_B64_TYPES = frozenset({"image", "audio"})
_DROPPED_MEMBERS = frozenset(
    {("fs/read_text_file", "content"), ("fs/write_text_file", "content"),
     ("terminal/output", "output")}
)  # fmt: skip


@dataclass(slots=True)
class _Walk:
    method: str | None
    paths: list[str] = field(default_factory=list)


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


class Redactor:
    """Redacts one connection (its row, then its frames in ``seq`` order)."""

    def __init__(
        self, finder: Finder, *, drop_contents: bool = False, detect_only: bool = False
    ) -> None:
        self._finder = finder
        self._drop = self.drop_contents = drop_contents
        self._detect = detect_only
        self.mapping: dict[str, str] = {}  # value -> placeholder
        self.counts: dict[str, int] = {}
        self.found: list[Found] = []
        self._shift: dict[str, int] = {}  # bytes added per direction, for offsets
        self._raw_triggers = re.compile(
            b"|".join(re.escape(orjson.dumps(t)[1:-1]) for t in finder.triggers)
        )

    def frame(self, record: dict[str, Any]) -> list[str]:
        """Redact an export record in place (``raw``, ``size``, ``offset``, text columns).

        Returns the changed JSON paths (``[]``: as it was, but ``offset`` follows its direction).
        """
        direction = record.get("direction", "")
        record["offset"] = record.get("offset", 0) + self._shift.get(direction, 0)
        raw: bytes = record["raw"]
        body = raw.rstrip(b"\r\n")
        ending = raw[len(body) :]
        new_body, paths = self._body(body, record.get("method"))
        if not self._detect:
            # Every column, whether or not the body changed: a response's session id comes
            # from its request, so a secret in it need not be in the response's own bytes.
            for column in (*TEXT_COLUMNS, "rpc_id"):
                if isinstance(record.get(column), str):
                    record[column] = self.text(record[column])
        if new_body is None or self._detect:
            return paths
        record["raw"] = new_body + ending
        record["size"] = len(record["raw"])
        self._shift[direction] = self._shift.get(direction, 0) + len(record["raw"]) - len(raw)
        return paths

    def _unchanged(self, body: bytes, method: str | None) -> bool:
        """True when no rule can change ``body`` (checked on the bytes, without parsing)."""
        if self._drop or method in AUTH_METHODS or b"\\u" in body or b"\\/" in body:
            return False  # an escape could hide a trigger from a plain byte search
        return not _STRUCTURAL.search(body.lower()) and not self._raw_triggers.search(body)

    def _body(self, body: bytes, method: str | None) -> tuple[bytes | None, list[str]]:
        if self._unchanged(body, method):
            return None, []
        if too_deep(body):
            found, paths = redact_deep(self, body, method, drop_contents=self._drop)
            return (None if self._detect else found), paths
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            text = body.decode("utf-8", "surrogateescape")
            new_text = self.text(text)
            if new_text == text:
                return None, []
            return new_text.encode("utf-8", "surrogateescape"), ["$"]
        mark = len(self.found)
        new, paths = self.value(parsed, method)
        if not paths or self._detect:
            return None, paths
        del self.found[mark:]  # walked again on the exact parse: big integers stay exact
        new, paths = self.value(json.loads(body), method)
        return _dumps(new), paths

    def connection(self, record: dict[str, Any]) -> list[str]:
        """Redact a connection record in place (JSON columns are JSON text); changed paths."""
        paths: list[str] = []
        for column in (*CONNECTION_TEXT, *CONNECTION_JSON):
            text = record.get(column)
            if not isinstance(text, str):
                continue
            parsed: Any = text
            if column in CONNECTION_JSON and too_deep(text.encode()):
                deep, changed = redact_deep(self, text.encode(), None, drop_contents=False)
                if deep is not None and not self._detect:
                    record[column] = deep.decode()
                paths += [f"connection.{column}" for _ in changed]
                continue
            if column in CONNECTION_JSON:
                with contextlib.suppress(ValueError):
                    parsed = json.loads(text)
            new, changed = self.value(parsed)
            if changed and not self._detect:
                record[column] = new if parsed is text else _dumps(new).decode()
            paths += [f"connection.{column}{p[1:]}" for p in changed]
        return paths

    def finish_connection(self, record: dict[str, Any]) -> None:
        """Make the byte totals of the connection record match the redacted frames."""
        for direction in ("c2a", "a2c", "stderr"):
            if isinstance(record.get(f"bytes_{direction}"), int):
                record[f"bytes_{direction}"] += self._shift.get(direction, 0)

    def placeholder(self, kind: str, value: str) -> str:
        known = self.mapping.get(value)
        if known is None:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            known = self.mapping[value] = f"[redacted:{kind}:{self.counts[kind]}]"
        return known

    def _replace(self, kind: str, value: str, path: str) -> str:
        self.found.append(Found(path, kind, value))
        return value if self._detect else self.placeholder(kind, value)

    def text(self, text: str, path: str = "$") -> str:
        """``text`` with every detected secret replaced."""
        pieces: list[str] = []
        last = 0
        for hit in self._finder.find(text):
            pieces += [
                text[last : hit.start],
                self._replace(hit.kind, text[hit.start : hit.end], path),
            ]
            last = hit.end
        if not pieces:
            return text
        return "".join(pieces) + text[last:]

    def whole(self, kind: str, value: Any, path: str) -> Any:
        """Replace a whole string value (not one already a placeholder)."""
        if not isinstance(value, str) or not value or PLACEHOLDER.fullmatch(value):
            return value
        return self._replace(kind, value, path)

    def _b64(self, value: Any, path: str, change: Callable[[str, str], str]) -> Any:
        if not isinstance(value, str):
            return value
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8", "surrogateescape")
        except (binascii.Error, ValueError):
            return change(value, path)
        redacted = change(decoded, path)
        if redacted == decoded:
            return value
        return base64.b64encode(redacted.encode("utf-8", "surrogateescape")).decode()

    def _content(self, value: str, path: str) -> str:
        return self.whole("content", value, path) if self._drop else self.text(value, path)

    def value(self, value: Any, method: str | None = None) -> tuple[Any, list[str]]:
        """A JSON value redacted, and the paths that changed (``method``: the message's)."""
        walk = _Walk(method)
        return self._walk(value, "$", walk, 0), walk.paths

    def _walk(self, value: Any, path: str, walk: _Walk, depth: int) -> Any:
        if isinstance(value, str):
            new = self.text(value, path)
            if new is not value and new != value:
                walk.paths.append(path)
            return new
        if isinstance(value, list):
            items = [self._walk(v, f"{path}[{i}]", walk, depth + 1) for i, v in enumerate(value)]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            return self._object(value, path, walk, depth)
        return value

    def _object(self, value: dict[str, Any], path: str, walk: _Walk, depth: int) -> Any:
        if depth == 0 and isinstance(value.get("method"), str):
            walk.method = value["method"]
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            where = _member(path, key)
            new = self._special(value, key, item, where, walk, depth)
            if new is _NOTHING:
                new = self._walk(item, where, walk, depth + 1)
            elif new is not item and new != item:
                walk.paths.append(where)
            new_key = self.text(key, where) if len(key) > 5 else key
            changed = changed or new is not item or new_key != key
            out[new_key] = new
        return out if changed else value

    def _special(
        self, parent: dict[str, Any], key: str, item: Any, where: str, walk: _Walk, depth: int
    ) -> Any:
        """A structural rule's result for ``parent[key]``, or ``_NOTHING`` to walk it."""
        if depth == 0 and walk.method in AUTH_METHODS and key in ("params", "result"):
            return self._all_strings("auth", item, where, skip="methodId")
        if secret_key(key) and isinstance(item, str | dict | list):
            return self._all_strings("secret", item, where)
        if key in ("env", "headers") and isinstance(item, list):
            items = [self._pair(key, entry, f"{where}[{i}]") for i, entry in enumerate(item)]
            return item if all(a is b for a, b in zip(items, item, strict=True)) else items
        update = parent.get("sessionUpdate")
        if key == "data" and update == "terminal_output_chunk":
            return self._b64(item, where, self._content)
        if key == "output" and update == "terminal_update" and isinstance(item, dict):
            if not isinstance(item.get("data"), str):
                return _NOTHING
            data = self._b64(item["data"], _member(where, "data"), self._content)
            return item if data == item["data"] else {**item, "data": data}
        if not self._drop or not isinstance(item, str):
            return _NOTHING
        kind = parent.get("type")
        if depth == 1 and (walk.method, key) in _DROPPED_MEMBERS:
            return self.whole("content", item, where)
        if (key == "data" and kind in _B64_TYPES) or (key == "blob" and "uri" in parent):
            return self._b64(item, where, lambda v, p: self.whole("content", v, p))
        if (key == "text" and "uri" in parent) or (
            key in ("oldText", "newText") and kind == "diff"
        ):
            return self.whole("content", item, where)
        return _NOTHING

    def _pair(self, key: str, entry: Any, where: str) -> Any:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return self._walk(entry, where, _Walk(None), 3)
        kind = "env" if key == "env" else "header"
        looks = secret_name(entry["name"]) or entry["name"].lower() in ("authorization", "cookie")
        out = {}
        for k, v in entry.items():
            at = _member(where, k)
            whole = looks and k == "value"
            out[k] = self.whole(kind, v, at) if whole else self._walk(v, at, _Walk(None), 3)
        return out if out != entry else entry

    def _all_strings(self, kind: str, value: Any, path: str, skip: str = "") -> Any:
        if isinstance(value, str):
            return self.whole(kind, value, path)
        if isinstance(value, list):
            items = [self._all_strings(kind, v, f"{path}[{i}]") for i, v in enumerate(value)]
            return items if items != value else value
        if isinstance(value, dict):
            out = {
                k: v if k == skip else self._all_strings(kind, v, _member(path, k))
                for k, v in value.items()
            }
            return out if out != value else value
        return value


_NOTHING: Any = object()  # "no structural rule: walk it"


def _dumps(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape: keep it escaped
        return json.dumps(value, separators=(",", ":")).encode()
