"""Sans-I/O verification: does an export line, a JSON document or a text still hold a secret?

Rules:
- The detectors are redaction's own (a detect-only ``redact.Redactor`` over the same
  ``secrets.Finder``), run afresh on what was written, never on a map: whatever ``redact``
  would still change is a leak. ``[redacted:KIND:N]`` placeholders are clean by construction.
- JSONL lines are read as exports: the header's connection record, and each frame's raw bytes
  (parsed as JSON when they are) plus its text columns. Other lines are scanned as text.
- A leak never shows the whole secret: ``Leak.shown`` gives a short prefix and the length.
- This module knows no process, file, clock or database.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.protocol.depth import too_deep
from acp_proxy.share.deep_redaction import redact_deep
from acp_proxy.share.redact import TEXT_COLUMNS, Redactor
from acp_proxy.share.secrets import Finder
from acp_proxy.store.jsonl import FORMAT


def _frame(value: dict[str, Any]) -> dict[str, Any] | None:
    """An export frame line's record with ``raw`` as bytes (None if it has no bytes)."""
    record = dict(value)
    if isinstance(record.get("raw_base64"), str):
        try:
            record["raw"] = base64.b64decode(record.pop("raw_base64"), validate=True)
        except binascii.Error:
            return None
    elif isinstance(record.get("raw"), str):
        record["raw"] = record["raw"].encode("utf-8", "surrogateescape")
    else:
        return None
    return record


@dataclass(frozen=True, slots=True)
class Leak:
    """Something that still looks secret, and where."""

    where: str
    kind: str
    value: str

    def shown(self) -> str:
        prefix = self.value[: min(4, len(self.value) // 4)]
        return f"{self.where}: {self.kind} {prefix!r}... ({len(self.value)} chars)"


class Verifier:
    """Scans written output with the redaction detectors, in detect-only mode."""

    def __init__(self, finder: Finder) -> None:
        self._redactor = Redactor(finder, detect_only=True)

    def _take(self, where: str) -> list[Leak]:
        found, self._redactor.found = self._redactor.found, []
        return [Leak(f"{where} {f.path}", f.kind, f.value) for f in found]

    def text(self, name: str, text: str, first_line: int = 1) -> list[Leak]:
        """Leaks in ``text``, named ``name:line`` (its lines numbered from ``first_line``)."""
        leaks: list[Leak] = []
        for number, line in enumerate(text.splitlines(), start=first_line):
            self._redactor.text(line, "")
            leaks += self._take(f"{name}:{number}")
        return leaks

    def json_document(self, name: str, data: bytes) -> list[Leak]:
        if too_deep(data):
            redact_deep(self._redactor, data, None, drop_contents=False)
            return self._take(name)
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return self.text(name, data.decode("utf-8", "surrogateescape"))
        self._redactor.value(value)
        return self._take(name)

    def jsonl_line(self, name: str, number: int, line: bytes) -> list[Leak]:
        where = f"{name}:{number}"
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            return self.text(where, line.decode("utf-8", "surrogateescape"))
        if isinstance(value, dict) and value.get("format") == FORMAT:
            return self._header(where, value)
        record = _frame(value) if isinstance(value, dict) else None
        if record is None:
            self._redactor.value(value)
            return self._take(where)
        where += f" (seq {record.get('seq')})"
        self._redactor.frame(record)
        for column in (*TEXT_COLUMNS, "rpc_id"):
            if isinstance(record.get(column), str):
                self._redactor.text(record[column], f"[{column}]")
        return self._take(where)

    def _header(self, where: str, header: dict[str, Any]) -> list[Leak]:
        connection = header.get("connection")
        if isinstance(connection, dict):
            self._redactor.connection(dict(connection))
            rest = {k: v for k, v in header.items() if k != "connection"}
            self._redactor.value({**rest, "connection": {"uid": connection.get("uid")}})
        else:
            self._redactor.value(header)
        return self._take(where)
