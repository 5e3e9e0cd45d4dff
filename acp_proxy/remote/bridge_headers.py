"""Sans-I/O: the bridge's request headers, and what of its command line may be recorded.

Rules:
- ``--header 'NAME: VALUE'`` is one header; ``$VAR`` and ``${VAR}`` in VALUE are replaced by
  that environment variable (``$$`` is one ``$``), so a secret never has to be written on a
  command line, where other users' ``ps`` and the recording's ``client_argv`` would see it. A
  variable that is not set, a name that is no HTTP token, a value with a line break: the
  header is refused (a usage error), never sent half-made.
- Headers are never recorded: the recorded agent command is the URL without its user
  information, query or fragment (``recorded_url``), and the client's command line has the
  value of every ``--header`` it passes replaced (``scrub_header_values``).
- No environment is read here: the caller passes it in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

HEADER_OPTION = "--header"
SCRUBBED = "[not recorded]"
# RFC 9110 token characters.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VARIABLE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
SCHEMES = {"http": "http", "https": "http", "ws": "ws", "wss": "ws"}


class HeaderError(ValueError):
    """A ``--header`` or ``--connect`` value that cannot be used (a usage error)."""


def parse_header(option: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """``'NAME: VALUE'`` -> (NAME, VALUE with its variables expanded)."""
    name, colon, value = option.partition(":")
    name = name.strip()
    if not colon or not _TOKEN.fullmatch(name):
        raise HeaderError(f"--header {name or option!r}: give it as 'NAME: VALUE'")

    def expand(match: re.Match[str]) -> str:
        variable = match.group(1) or match.group(2)
        if variable is None:
            return "$"
        if variable not in environ:
            raise HeaderError(f"--header {name}: the variable {variable} is not set")
        return environ[variable]

    expanded = _VARIABLE.sub(expand, value.strip())
    if any(c in expanded for c in "\r\n\0"):
        raise HeaderError(f"--header {name}: the value holds a line break or NUL")
    return name, expanded


def parse_headers(options: Sequence[str], environ: Mapping[str, str]) -> list[tuple[str, str]]:
    return [parse_header(option, environ) for option in options]


def transport_of(url: str) -> str:
    """``"http"`` (Streamable HTTP) or ``"ws"`` (WebSocket) for a ``--connect`` URL."""
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise HeaderError(f"--connect {url!r}: {error}") from None
    transport = SCHEMES.get(parts.scheme.lower())
    if transport is None or not parts.hostname:
        raise HeaderError(f"--connect {url!r}: give an http(s):// or ws(s):// URL with a host")
    return transport


def recorded_url(url: str) -> str:
    """The URL as it may be recorded: scheme, host, port and path only."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit((parts.scheme.lower(), host + port, parts.path, "", ""))


def scrub_header_values(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of every ``--header`` option replaced (see the rules)."""
    words = list(argv)
    for index, word in enumerate(words):
        if word == HEADER_OPTION and index + 1 < len(words):
            words[index + 1] = _scrubbed(words[index + 1])
        elif word.startswith(HEADER_OPTION + "="):
            words[index] = f"{HEADER_OPTION}={_scrubbed(word[len(HEADER_OPTION) + 1 :])}"
    return words


def _scrubbed(option: str) -> str:
    name, colon, _ = option.partition(":")
    return f"{name}: {SCRUBBED}" if colon else SCRUBBED
