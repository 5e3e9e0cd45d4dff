"""Sans-I/O rules on the content of session updates (digest 8, rules 22-27).

Rules:
- Open enums: a value starting with ``_`` is an extension and fine; any other value not
  known to this version of acp-proxy is "reserved for ACP" and reported as a warning (a future
  variant or a mistake), never as an error.
- Paths must be absolute (POSIX ``/...``, Windows ``C:\\...`` or ``\\\\server``); terminal bytes
  are base64 (RFC 4648, strict).
- ACP023 is a self-check of the recorder: the stored columns must say what the bytes say.
"""

from __future__ import annotations

import binascii
import re
from typing import Any

from acp_proxy.check.base import (
    ERROR,
    WARNING,
    Context,
    Event,
    Rule,
    RuleInfo,
    UpdateRule,
    get,
    text,
)
from acp_proxy.protocol import acp

_EXT = "v2/draft/extensibility.mdx"
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_OPEN_ENUMS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    # update kind -> (path to the value, known values)
    "state_update": (("state",), frozenset({"running", "idle", "requires_action", "unknown"})),
    "notice": (("severity",), frozenset({"info", "warning", "error"})),
    "compaction_update": (
        ("status",),
        frozenset({"in_progress", "completed", "failed", "cancelled"}),
    ),
}
_TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode",
     "other"}
)  # fmt: skip
_TOOL_STATUSES = frozenset({"pending", "in_progress", "paused", "completed", "failed", "cancelled"})
_CWD_METHODS = frozenset(
    {"session/new", "session/load", "session/resume", "session/fork", "session/list",
     "terminal/create"}
)  # fmt: skip


def reserved(value: Any, known: frozenset[str]) -> bool:
    """A string that is neither known nor an ``_`` extension."""
    return isinstance(value, str) and value not in known and not value.startswith("_")


class ReservedValues(UpdateRule):
    info = RuleInfo(
        "ACP022", WARNING,
        "Custom stopReason, state, severity, status, tool kind and update kinds start with _",
        f"{_EXT}; v2/draft/prompt-lifecycle.mdx (Stop Reasons)",
        "prefix custom values with _; other unknown values are reserved for future ACP",
    )  # fmt: skip

    def message(self, event: Event) -> None:
        kind = event.update_kind
        if kind is None:
            return
        version = self.state.version
        if not acp.is_known_update_kind(kind, version) and not kind.startswith("_"):
            closed = " (v1's union is closed: v1 clients may drop it)" if version == 1 else ""
            text = f"unknown update kind {kind!r}: not in this ACP version (newer, or a mistake)"
            self.flag(event, text + closed)
            return
        found: list[tuple[str, Any]] = []
        if kind in _OPEN_ENUMS:
            path, known = _OPEN_ENUMS[kind]
            value = get(event.update, *path)
            if reserved(value, known):
                found.append((path[0], value))
        if kind == "state_update" and reserved(get(event.update, "stopReason"), acp.STOP_REASONS):
            found.append(("stopReason", get(event.update, "stopReason")))
        if kind in ("tool_call", "tool_call_update"):
            for name, known in (("kind", _TOOL_KINDS), ("status", _TOOL_STATUSES)):
                if reserved(get(event.update, name), known):
                    found.append((name, get(event.update, name)))
        for name, value in found:
            self.flag(
                event,
                f"{kind} {name} {value!r} is not a value this ACP version defines (a newer one, "
                "or a mistake)",
            )


class RecorderKeepsUnknown(UpdateRule):
    info = RuleInfo(
        "ACP023", WARNING,
        "Unknown update kinds are stored and forwarded verbatim (self-check of the recorder)",
        "schema/v2/schema.json SessionUpdate (other)",
        "a bug in acp-proxy: please report it with the frame",
    )  # fmt: skip

    def message(self, event: Event) -> None:
        record = self.context.record
        stored = record.update_kind if record is not None else event.update_kind
        if not event.in_batch and stored != event.update_kind:
            self.flag(event, f"stored update kind {stored!r}, the bytes say {event.update_kind!r}")


class ToolCallOrder(Rule):
    info = RuleInfo(
        "ACP024", WARNING,
        "v2: a tool call's content chunks normally follow its first tool_call_update (advisory)",
        "v2/draft/tool-calls.mdx", "send tool_call_update before streaming the call's content",
    )  # fmt: skip
    methods = frozenset({acp.SESSION_UPDATE})
    update_kinds = frozenset({"tool_call_update", "tool_call_content_chunk"})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.known: set[tuple[str | None, str]] = set()
        self.warned: set[tuple[str | None, str]] = set()

    def message(self, event: Event) -> None:
        call = text(get(event.update, "toolCallId"))
        if not self.state.v2 or call is None:
            return
        key = (event.session_id, call)
        if event.update_kind == "tool_call_update":
            self.known.add(key)
        elif key not in self.known and key not in self.warned:
            self.warned.add(key)
            self.flag(event, f"content chunk for {call!r} before any tool_call_update for it")


def _absolute(path: Any) -> bool:
    return not isinstance(path, str) or path.startswith("/") or bool(_WINDOWS_ABSOLUTE.match(path))


def _base64(data: Any) -> bool:
    if not isinstance(data, str):
        return True  # a type error is the schema's to report
    try:
        binascii.a2b_base64(data.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return False
    return True


class PathsAndBytes(Rule):
    info = RuleInfo(
        "ACP025", ERROR, "File paths are absolute; terminal output data is valid base64",
        "v2/draft/tool-calls.mdx (Display-only Terminals); overview.mdx (Argument requirements)",
        "send absolute paths and base64-encode terminal bytes (RFC 4648)",
    )  # fmt: skip
    kinds = frozenset({"request", "notification"})
    methods = None
    update_kinds = frozenset(
        {"tool_call", "tool_call_update", "tool_call_content_chunk", "terminal_update",
         "terminal_output_chunk"}
    )  # fmt: skip

    def message(self, event: Event) -> None:
        params, update = event.params, event.update
        paths: list[tuple[str, Any]] = []
        if event.method in _CWD_METHODS:
            paths.append(("cwd", get(params, "cwd")))
            extra = get(params, "additionalDirectories")
            paths += [("additionalDirectories", d) for d in extra or [] if isinstance(extra, list)]
        elif event.method in ("fs/read_text_file", "fs/write_text_file"):
            paths.append(("path", get(params, "path")))
        elif update is not None:
            paths += self._update_paths(update)
            if event.update_kind == "terminal_update" and not _base64(
                get(update, "output", "data")
            ):
                self.flag(event, "terminal_update output.data is not valid base64")
            if event.update_kind == "terminal_output_chunk" and not _base64(get(update, "data")):
                self.flag(event, "terminal_output_chunk data is not valid base64")
        for name, path in paths:
            if not _absolute(path):
                self.flag(event, f"{name} {path!r} is not an absolute path")

    @staticmethod
    def _update_paths(update: dict[str, Any]) -> list[tuple[str, Any]]:
        found: list[tuple[str, Any]] = [("cwd", update.get("cwd"))]
        locations = update.get("locations")
        for location in locations if isinstance(locations, list) else []:
            found.append(("locations[].path", get(location, "path")))
        content = update.get("content")
        for item in content if isinstance(content, list) else [content]:
            if get(item, "type") == "diff":
                found.append(("diff path", get(item, "path")))
        return found


class PlanIds(UpdateRule):
    info = RuleInfo(
        "ACP026", ERROR,
        "Every plan_update plan carries planId; item plans send the full entry list",
        "v2/draft/agent-plan.mdx", 'give every plan a "planId" and items plans an "entries" list',
    )  # fmt: skip
    update_kinds = frozenset({"plan_update"})

    def message(self, event: Event) -> None:
        plan = get(event.update, "plan")
        if not isinstance(get(plan, "planId"), str):
            self.flag(event, "plan_update without a planId")
        if get(plan, "type") == "items" and not isinstance(get(plan, "entries"), list):
            self.flag(event, "items plan without its entries list")


class NoticeShape(UpdateRule):
    info = RuleInfo(
        "ACP027", ERROR,
        "A notice has a severity and a non-empty title; description is text or null",
        "v2/draft/prompt-lifecycle.mdx (Session Notices)",
        'send "severity" and a non-empty "title"; "description" only as a string or null',
    )  # fmt: skip
    update_kinds = frozenset({"notice"})

    def message(self, event: Event) -> None:
        update = event.update or {}
        if not isinstance(update.get("severity"), str):
            self.flag(event, "notice without a severity")
        title = update.get("title")
        if not (isinstance(title, str) and title.strip()):
            self.flag(event, f"notice title {title!r} is not a non-empty string")
        if update.get("description") is not None and not isinstance(update["description"], str):
            self.flag(event, "notice description is neither a string nor null")


UPDATE_RULES: tuple[type[Rule], ...] = (
    ReservedValues, RecorderKeepsUnknown, ToolCallOrder, PathsAndBytes, PlanIds, NoticeShape,
)  # fmt: skip
