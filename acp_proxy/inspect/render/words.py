"""Pure helpers shared by the text, Markdown and HTML renderers: words for values.

Rules:
- No I/O and no markup: each function turns a value into plain words (the renderers escape
  and style them). Nothing here raises on odd peer values; unknown shapes become JSON text.
- Durations are nanoseconds in, one short unit out (``850 us``, ``12.5 ms``, ``3.20 s``).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import orjson

from acp_proxy.protocol.depth import DEEP_MARK
from acp_proxy.store.values import Carrier

PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def duration(ns: int | None) -> str:
    if ns is None:
        return "-"
    if ns < 1_000_000:
        return f"{ns / 1000:.0f} us"
    if ns < 1_000_000_000:
        ms = ns / 1e6
        return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ns / 1e9:.2f} s"


def since(start: int | None, end: int | None) -> str:
    return "-" if start is None or end is None else duration(end - start)


def wall(ns: int | None) -> str:
    if ns is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


COMMAND_WIDTH = 40

# Programs that run another program named in their arguments: the interpreters and package
# runners agents are started with. Each maps to the words that may follow it before the
# program (``uv run``), and the options among its own that take a value after a space.
_INTERPRETERS = {
    "python": ((), ("-X", "-W", "-Q")), "node": ((), ("-r", "--require", "--import", "--loader")),
    "bun": (("run", "x"), ()), "deno": (("run",), ()), "ruby": ((), ("-I", "-r")),
    "perl": ((), ("-I", "-M")), "php": ((), ("-d", "-c")), "tsx": ((), ()), "ts-node": ((), ()),
    "sh": ((), ()), "bash": ((), ()), "env": ((), ("-u", "-C", "-S")),
    "uv": (("run", "tool"), ("--with", "--python", "-p", "--project", "--directory", "--from")),
    "uvx": ((), ("--with", "--python", "-p", "--from")), "npx": ((), ("-p", "--package")),
    "pnpm": (("dlx", "exec"), ()), "yarn": (("dlx", "exec"), ()), "bunx": ((), ()),
    "pipx": (("run",), ("--spec",)), "poetry": (("run",), ()), "nix": (("run",), ()),
}  # fmt: skip
_GENERIC_NAMES = {"index", "main", "__main__", "cli", "run", "start", "server", "agent"}
_CODE_OPTIONS = ("-c", "-e", "--eval", "-p", "--print")  # the program is the code itself
_MODULE_OPTIONS = ("-m",)  # python -m MODULE: the module is the program


def _interpreter(word: str) -> str | None:
    """``python3.11`` -> ``python``; None when ``word`` runs no program named after it."""
    name = word.rsplit("/", 1)[-1].removesuffix(".exe")
    for known in _INTERPRETERS:
        if name == known or (known == "python" and name.startswith("python")):
            return known
    return None


def program(argv: Any) -> list[str]:
    """The words of a command line from the program a person would name (see ``command``).

    Interpreters and package runners are passed over, with their own options, to the script,
    module or package they run: ``python -u examples/echo_agent.py`` is ``echo_agent.py``,
    ``uv run --with x python -m agent`` is ``agent``, ``npx -y @google/gemini-cli`` is
    ``@google/gemini-cli``. What cannot be told apart is left as it is.
    """
    words = [str(word) for word in argv]
    at = 0
    while at < len(words):
        known = _interpreter(words[at])
        if known is None:
            break
        subcommands, valued = _INTERPRETERS[known]
        rest = at + 1
        if rest < len(words) and words[rest] in subcommands:
            rest += 1
        while rest < len(words):
            word = words[rest]
            if known == "env" and "=" in word and not word.startswith("-"):
                rest += 1
            elif word in _MODULE_OPTIONS and known == "python" and rest + 1 < len(words):
                return [words[rest + 1], *words[rest + 2 :]]
            elif word in _CODE_OPTIONS and known not in ("env", "uv", "uvx", "npx"):
                return words[at:]  # the program is inline code: the command as it is
            elif word in valued:
                rest += 2
            elif word.startswith("-") and word != "-":
                rest += 1
            else:
                break
        if rest >= len(words):
            return words[at:]
        at = rest
    if at >= len(words):
        return words
    return [_short_path(words[at]), *words[at + 1 :]]


def _short_path(path: str) -> str:
    """A script's file name; with its folder when the name alone says little (``index.js``)."""
    if "/" not in path or path.startswith("@"):
        return path
    parts = [part for part in path.split("/") if part]
    if not parts:
        return path
    if len(parts) > 1 and parts[-1].split(".", 1)[0] in _GENERIC_NAMES:
        return "/".join(parts[-2:])
    return parts[-1]


def command(argv: Any, width: int = COMMAND_WIDTH) -> str:
    """A recorded command line, short: the program's file name, then its arguments, cut.

    The program is the one ``program`` names: a script rather than its interpreter.
    """
    if not isinstance(argv, list | tuple) or not argv:
        return ""
    words = program(argv)
    text = " ".join(" ".join(w.split()) or "''" for w in words)
    return text if len(text) <= width else text[: width - 1] + "…"


def peer(info: Any, argv: Any = None) -> str:
    """``title version`` (or name) of a clientInfo/agentInfo object.

    A peer that sent none is named by its command line when it is known, else ``unnamed``.
    """
    name = info.get("title") or info.get("name") if isinstance(info, dict) else None
    if not name:
        return command(argv) or "unnamed"
    version = info.get("version")
    return f"{name} {version}" if version else str(name)


def to_json(value: Any, *, pretty: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if pretty else 0
    try:
        return orjson.dumps(value, option=option).decode()
    except TypeError:  # nested deeper than orjson writes: repr would recurse as deep
        return DEEP_MARK


def block_text(block: Any) -> str:
    """A content block as the text a client shows for it."""
    if not isinstance(block, dict):
        return to_json(block)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    if kind == "resource_link":
        return f"[{block.get('name') or block.get('uri')}]({block.get('uri')})"
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        body = resource.get("text")
        uri = resource.get("uri", "resource")
        return f"{uri}:\n{body}" if isinstance(body, str) else f"<{uri}>"
    if kind in ("image", "audio"):
        return f"<{kind} {block.get('mimeType', '')}>".replace(" >", ">")
    return to_json(block)


def content_text(content: Any, block_text: Callable[[Any], str] = block_text) -> str:
    """Text of a content list (or one block), adjacent text blocks joined as streamed.

    ``block_text`` renders each block (a renderer passes its own to escape or link).
    """
    blocks = content if isinstance(content, list | tuple) else [content]
    parts: list[str] = []
    previous_text = False
    for block in blocks:
        is_text = isinstance(block, dict) and block.get("type") == "text"
        if parts and not (is_text and previous_text):
            parts.append("\n\n")
        parts.append(block_text(block))
        previous_text = is_text
    return "".join(parts)


def tool_content_text(item: Any) -> str:
    """One ToolCallContent: content, diff or terminal."""
    if not isinstance(item, dict):
        return to_json(item)
    kind = item.get("type")
    if kind == "content":
        return block_text(item.get("content"))
    if kind == "diff":
        return f"diff {item.get('path', '?')}:\n{item.get('newText', '')}"
    if kind == "terminal":
        return f"terminal {item.get('terminalId', '?')}"
    return to_json(item)


def plan_line(entry: Any) -> str:
    if not isinstance(entry, dict):
        return to_json(entry)
    mark = PLAN_MARKS.get(str(entry.get("status")), "[?]")
    priority = f" ({entry['priority']})" if entry.get("priority") else ""
    return f"{mark} {entry.get('content', '')}{priority}"


def usage_text(usage: Any) -> str:
    if not isinstance(usage, dict):
        return to_json(usage)
    cost = usage.get("cost")
    money = ""
    if isinstance(cost, dict):
        money = f", {cost.get('amount')} {cost.get('currency', '')}".rstrip()
    if "used" in usage or "size" in usage:
        return f"{usage.get('used', '?')} / {usage.get('size', '?')} tokens{money}"
    return to_json(usage)


def permission_answer(outcome: Any, error: Any, options: Any) -> str:
    """What the client answered: the chosen option's name, ``cancelled``, or the error."""
    if error is not None:
        return (
            f"error {error.get('code')}: {error.get('message')}"
            if isinstance(error, dict)
            else "error"
        )
    if not isinstance(outcome, dict):
        return "no answer"
    if outcome.get("outcome") == "selected":
        chosen = outcome.get("optionId")
        for option in options if isinstance(options, list) else []:
            if isinstance(option, dict) and option.get("optionId") == chosen:
                return f"{option.get('name', chosen)} ({option.get('kind', 'option')})"
        return f"option {chosen}"
    return str(outcome.get("outcome", "unknown"))


def option_names(options: Any) -> str:
    if not isinstance(options, list):
        return ""
    return " / ".join(str(o.get("name", o.get("optionId"))) for o in options if isinstance(o, dict))


# A remote frame's stream: a short tag for a frame line, words for the inspector's detail.
STREAM_TAGS = {
    "post": "post", "post_answer": "answer", "connection_sse": "conn-sse",
    "session_sse": "sess-sse", "websocket": "ws",
}  # fmt: skip
STREAM_WORDS = {
    "post": "HTTP POST body", "post_answer": "HTTP POST answer body",
    "connection_sse": "connection SSE stream", "session_sse": "session SSE stream",
    "websocket": "WebSocket",
}  # fmt: skip
_EXPECTED_STATUS = {"connection_sse": 200, "session_sse": 200, "websocket": 101}


def _telling_status(carrier: Carrier) -> int | None:
    """The exchange's status where it says something: always for a POST (202 accepted, 200
    answered, or a refusal), for a stream only when it is not the usual one."""
    if carrier.status is None or _EXPECTED_STATUS.get(carrier.stream) == carrier.status:
        return None
    return carrier.status


def carrier_tag(carrier: Carrier) -> str:
    """``post#3 202``, ``answer#1 200``, ``conn-sse#2``, ``sess-sse#4``, ``ws#1``."""
    status = _telling_status(carrier)
    tag = f"{STREAM_TAGS.get(carrier.stream, carrier.stream)}#{carrier.exchange}"
    return tag if status is None else f"{tag} {status}"


def carrier_words(carrier: Carrier) -> str:
    """``HTTP POST body, exchange 3, status 202``; ``WebSocket, exchange 1``."""
    status = _telling_status(carrier)
    words = f"{STREAM_WORDS.get(carrier.stream, carrier.stream)}, exchange {carrier.exchange}"
    return words if status is None else f"{words}, status {status}"
