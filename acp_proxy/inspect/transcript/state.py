"""Sans-I/O mutable state of the transcript model: a session's timeline, turns and settings.

Rules:
- Only ``model.py`` changes these; ``view()`` freezes them into transcript.values.
- A timeline keeps items in first-seen order; replacing an item keeps its place.
- ``appended`` holds what chunks added to entities since they were last settled
  (inspect/transcript/entities.py); ``view()`` settles them first, so a view is always whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from acp_proxy.inspect.transcript.entities import Appended, Key, settle
from acp_proxy.inspect.transcript.values import Entry, Item, PromptTurn, SessionView


class Timeline:
    """Items in first-seen order, replaceable in place."""

    def __init__(self) -> None:
        self.items: dict[Key, Item] = {}

    def put(self, key: Key, item: Item) -> None:
        self.items[key] = item  # a new key goes last; an existing one keeps its place

    def remove(self, key: Key) -> None:
        self.items.pop(key, None)


class SessionState:
    def __init__(self, session_id: str, opened_by: str | None) -> None:
        self.session_id = session_id
        self.opened_by = opened_by
        self.timeline = Timeline()
        self.appended: dict[Key, Appended] = {}
        self.turns: list[PromptTurn] = []
        self.open_turns: list[int] = []
        self.last_entity: Key | None = None
        self.anonymous = 0
        self.state: str | None = None
        self.usage: Any = None
        self.commands: Any = None
        self.config_options: Any = None
        self.mode: str | None = None
        self.info: dict[str, Any] = {}

    @property
    def turn(self) -> int | None:
        return self.open_turns[-1] if self.open_turns else None

    def change_turn(self, index: int, **changes: Any) -> None:
        self.turns[index] = replace(self.turns[index], **changes)

    def settle(self, key: Key) -> None:
        """Fold what chunks appended to the entity at ``key`` into it."""
        appended = self.appended.get(key)
        item = self.timeline.items.get(key)
        if appended is not None and isinstance(item, Entry):
            self.timeline.put(key, settle(item, appended))

    def view(self) -> SessionView:
        for key in self.appended:
            self.settle(key)
        return SessionView(
            self.session_id, self.opened_by, tuple(self.timeline.items.values()),
            tuple(self.turns), self.state, self.usage, self.commands, self.config_options,
            self.mode, dict(self.info),
        )  # fmt: skip
