"""Wrapping an agent entry of an editor's settings in ``acp-proxy record``, and unwrapping it.

Rules:
- Both Zed (``settings.json``) and JetBrains IDEs (``~/.jetbrains/acp.json``) keep agents under
  ``agent_servers.NAME`` with ``command`` (a string), ``args`` and ``env``. Only ``command`` and
  ``args`` of that one entry change; every other byte of the file stays as the user wrote it.
- Wrapped: ``command`` is the proxy's absolute path (GUI editors do not see the shell's PATH)
  and ``args`` is ``record --label NAME -- OLD_COMMAND OLD_ARGS...``. Unwrapping reads the old
  command back from after ``--``, so it needs no other state. Wrapping twice is refused.
- A command the editor must find by name (``gemini``, ``npx``, ``./agent``) is named by
  ``command_by_name`` so the command line can warn of the absolute-path pitfall
  (docs/editors.md); the entry keeps the command exactly as the user wrote it.
- Pure: text in, text out; problems raise ``WiringError`` with one line for the user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import orjson

from acp_proxy.editors.jsonc import JsoncError, Node, parse


class WiringError(ValueError):
    """The settings do not allow the change asked for (said in one line)."""


@dataclass(frozen=True, slots=True)
class Changed:
    text: str  # the whole settings file after the change
    entry: dict[str, Any]  # the agent's entry after the change


def _entry(text: str, name: str) -> tuple[Node, Node]:
    try:
        document = parse(text)
    except JsoncError as error:
        raise WiringError(f"the settings are not JSON: {error}") from error
    servers = document.members.get("agent_servers")
    if servers is None or not isinstance(servers.value, dict):
        raise WiringError("the settings have no agent_servers")
    entry = servers.members.get(name)
    if entry is None:
        known = ", ".join(sorted(servers.value)) or "none"
        raise WiringError(f"no agent {name!r} in agent_servers (there: {known})")
    command = entry.members.get("command")
    if command is None or not isinstance(command.value, str):
        raise WiringError(
            f"agent {name!r} has no command to wrap (an editor's built-in agent: add it to "
            "agent_servers with its command first; see docs/editors.md)"
        )
    return entry, command


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def is_wrapped(entry: dict[str, Any]) -> bool:
    args = entry.get("args")
    return (
        PurePath(str(entry.get("command", ""))).name == "acp-proxy"
        and isinstance(args, list)
        and args[:1] == ["record"]
        and "--" in args
    )


def command_by_name(entry: dict[str, Any]) -> str | None:
    """The agent's command when the editor must look it up (not an absolute path), or None.

    ``None`` too when the entry sets its own ``PATH`` in ``env``: the editor then searches that.
    """
    command = entry.get("command")
    if not isinstance(command, str) or PurePath(command).is_absolute() or not command:
        return None
    env = entry.get("env")
    if isinstance(env, dict) and isinstance(env.get("PATH"), str):
        return None
    return command


def _replace(text: str, entry: Node, command: Node, new_command: str, new_args: list[str]) -> str:
    args = entry.members.get("args")
    edits = [(command.start, command.end, _json(new_command))]
    if args is not None:
        edits.append((args.start, args.end, _json(new_args)))
    else:
        edits.append((command.end, command.end, f', "args": {_json(new_args)}'))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def wrap(text: str, name: str, proxy: str, *, db: str | None = None) -> Changed:
    """Put ``proxy record`` in front of agent ``name``'s command."""
    entry, command = _entry(text, name)
    if is_wrapped(entry.value):
        raise WiringError(f"agent {name!r} already runs through acp-proxy")
    old_args = entry.value.get("args", [])
    if not isinstance(old_args, list) or not all(isinstance(a, str) for a in old_args):
        raise WiringError(f"agent {name!r} has args that are not a list of strings")
    options = ["--db", db] if db else []
    new_args = ["record", *options, "--label", name, "--", command.value, *old_args]
    changed = _replace(text, entry, command, proxy, new_args)
    return Changed(changed, {**entry.value, "command": proxy, "args": new_args})


def unwrap(text: str, name: str) -> Changed:
    """Give agent ``name`` back the command that ``wrap`` put behind the proxy."""
    entry, command = _entry(text, name)
    if not is_wrapped(entry.value):
        raise WiringError(f"agent {name!r} does not run through acp-proxy")
    args = entry.value["args"]
    rest = args[args.index("--") + 1 :]
    if not rest:
        raise WiringError(f"agent {name!r} runs acp-proxy with no agent command after --")
    changed = _replace(text, entry, command, rest[0], rest[1:])
    return Changed(changed, {**entry.value, "command": rest[0], "args": rest[1:]})
