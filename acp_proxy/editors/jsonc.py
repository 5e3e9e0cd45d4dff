"""A JSON-with-comments reader that remembers where each value is in the text.

Rules:
- Reads what editors write (Zed's settings.json, JetBrains' acp.json): JSON plus ``//`` and
  ``/* */`` comments and trailing commas. Anything else raises ``JsoncError`` with a position.
- It never rewrites a document: callers replace the spans of the values they change, so every
  other byte of the user's file (comments, layout, order) stays as it was.
- Pure: text in, values and spans out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


class JsoncError(ValueError):
    """The text is not JSON with comments."""


@dataclass(slots=True)
class Node:
    """A value and its span ``[start, end)``; objects keep their members' nodes by key."""

    value: Any
    start: int
    end: int
    members: dict[str, Node] = field(default_factory=dict)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, what: str) -> JsoncError:
        line = self.text.count("\n", 0, self.at) + 1
        return JsoncError(f"{what} at line {line}")

    def blank(self) -> None:
        text = self.text
        while self.at < len(text):
            if text[self.at] in " \t\r\n\ufeff":
                self.at += 1
            elif text.startswith("//", self.at):
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            elif text.startswith("/*", self.at):
                end = text.find("*/", self.at + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.at = end + 2
            else:
                return

    def value(self) -> Node:
        self.blank()
        if self.at >= len(self.text):
            raise self.fail("a value is missing")
        char = self.text[self.at]
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            return self.string()
        return self.scalar()

    def string(self) -> Node:
        start = self.at
        at = start + 1
        text = self.text
        while at < len(text) and text[at] != '"':
            at += 2 if text[at] == "\\" else 1
        if at >= len(text):
            raise self.fail("unterminated string")
        self.at = at + 1
        try:
            return Node(orjson.loads(text[start : self.at]), start, self.at)
        except orjson.JSONDecodeError as error:
            raise self.fail(f"bad string ({error})") from error

    def scalar(self) -> Node:
        start = self.at
        while self.at < len(self.text) and self.text[self.at] not in ",]}/ \t\r\n":
            self.at += 1
        try:
            return Node(orjson.loads(self.text[start : self.at]), start, self.at)
        except orjson.JSONDecodeError as error:
            raise self.fail(f"unexpected {self.text[start : self.at]!r}") from error

    def array(self) -> Node:
        start = self.at
        self.at += 1
        items: list[Any] = []
        while True:
            self.blank()
            if self.text.startswith("]", self.at):
                self.at += 1
                return Node(items, start, self.at)
            items.append(self.value().value)
            self.blank()
            if self.text.startswith(",", self.at):
                self.at += 1
            elif not self.text.startswith("]", self.at):
                raise self.fail("expected , or ]")

    def object(self) -> Node:
        node = Node({}, self.at, self.at)
        self.at += 1
        while True:
            self.blank()
            if self.text.startswith("}", self.at):
                self.at += 1
                node.end = self.at
                return node
            if not self.text.startswith('"', self.at):
                raise self.fail("expected a key")
            key = self.string().value
            self.blank()
            if not self.text.startswith(":", self.at):
                raise self.fail("expected :")
            self.at += 1
            member = self.value()
            node.members[key] = member
            node.value[key] = member.value
            self.blank()
            if self.text.startswith(",", self.at):
                self.at += 1
            elif not self.text.startswith("}", self.at):
                raise self.fail("expected , or }")


def parse(text: str) -> Node:
    """The document's top value with spans (see ``Node``)."""
    reader = _Reader(text)
    node = reader.value()
    reader.blank()
    if reader.at != len(text):
        raise reader.fail("text after the document")
    return node
