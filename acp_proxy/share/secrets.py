"""Sans-I/O secret detectors: what in a piece of text (or under a JSON key) looks secret.

Rules:
- ``Finder.find(text)`` yields non-overlapping ``Hit``s, leftmost first; where two detectors
  match at the same place, the one listed first in ``_PATTERNS`` wins (exact values the user
  told us about come before shapes). A hit may cover only part of a match (the token after
  ``Bearer``, the password of ``scheme://user:password@``, the user name in a home path).
- Detectors are shapes (provider API keys, GitHub/Slack/Stripe tokens, AWS key ids, JWTs,
  bearer headers, PEM private key blocks, URL passwords, e-mail addresses, ``/home/NAME``),
  plus exact values given by the caller: the values of environment variables whose names look
  secret (``secret_name``), the user's home folder and user name. The caller reads the
  environment; this module never does.
- Every pattern starts with a literal or a bounded class behind a boundary, so no input makes a
  search quadratic (e-mail local parts are at most 64 characters).
- ``[redacted:KIND:N]`` placeholders never match any detector, so redacted text is clean.
- This module knows no process, file, clock or database.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\[redacted:[a-z0-9-]+:[0-9]+\]")
MIN_ENV_VALUE = 8  # shorter values (flags, ports, "true") would redact half the recording
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|AUTH|CREDENTIAL|PRIVATE|COOKIE|SESSION_ID"
    r"|(?:^|_)(?:PASS|PWD|PAT|SIG|SIGNATURE|DSN)(?:_|$)"
)
_NOT_SECRET_NAME = re.compile(r"^(?:PWD|OLDPWD|SSH_AUTH_SOCK|.*_(?:PATH|DIR|FILE|HOME|URL_BASE))$")
_SECRET_KEY = re.compile(
    r"(?:^|_)(?:api_?key|apikey|access_?key|secret|secret_?key|client_?secret|password|passwd"
    r"|passphrase|private_?key|authorization|cookie|set_cookie|credentials?|(?:access|refresh"
    r"|id|auth|bearer|session|api)_?token|token)$"
)
# Every match contains one of these (``Finder.maybe``: a cheap test before the pattern runs).
_TRIGGERS = (
    "-----BEGIN", "sk-", "AIza", "AKIA", "ASIA", "ABIA", "ACCA", "ghp_", "gho_", "ghu_", "ghs_",
    "ghr_", "github_pat_", "xox", "_live_", "_test_", "eyJ", "earer", "EARER", "://", "@",
    "/home/", "/Users/", "Users",
)  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TOKEN_TAIL = r"(?![A-Za-z0-9_\-])"  # noqa: S105 (a pattern, not a password)

# (kind, pattern); a group named ``v`` (if any) is the part to redact. Order is priority.
_PATTERNS: list[tuple[str, str]] = [
    ("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("api-key", r"(?<![A-Za-z0-9_\-])sk-ant-[A-Za-z0-9_\-]{20,}" + _TOKEN_TAIL),
    ("api-key", r"(?<![A-Za-z0-9_\-])sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}"
                + _TOKEN_TAIL),
    ("api-key", r"(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}" + _TOKEN_TAIL),
    ("aws-key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    ("github-token", r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"
                     r"(?![A-Za-z0-9_])"),
    ("slack-token", r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9\-]{10,}" + _TOKEN_TAIL),
    ("stripe-key", r"(?<![A-Za-z0-9_])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9])"),
    ("jwt", r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer-token", r"\b(?:[Bb]earer|BEARER)\s+(?P<v>[A-Za-z0-9\-._~+/]{12,}=*)"),
    ("password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^/\s:@\[\]]{1,128}:(?P<v>[^/\s@\[\]]{1,256})@"),
    ("email", r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}"
              r"(?:\.[A-Za-z0-9\-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9\-])"),
    ("user", r"(?:/home/|/Users/|\b[A-Za-z]:\\+Users\\+)(?P<v>[^/\\\s\"'\[\]<>:;,|*?]{1,64})"),
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Hit:
    """A secret at ``text[start:end]``."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True, slots=True)
class Found:
    """A value that was (or, when only detecting, would be) redacted, and where it was."""

    path: str
    kind: str
    value: str


def secret_name(name: str) -> bool:
    """Whether an environment variable called ``name`` probably holds a secret."""
    upper = name.upper()
    return bool(_SECRET_NAME.search(upper)) and not _NOT_SECRET_NAME.match(upper)


def secret_key(key: str) -> bool:
    """Whether a JSON member called ``key`` (apiKey, access_token, password ...) holds a secret."""
    snake = _CAMEL.sub("_", key).lower().replace("-", "_")
    return bool(_SECRET_KEY.search(snake))


def environment_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """Values (at least ``MIN_ENV_VALUE`` long) of the variables whose names look secret."""
    found: dict[str, str] = {}
    for name, value in sorted(environ.items()):
        text = value.strip()
        if len(text) >= MIN_ENV_VALUE and secret_name(name) and not PLACEHOLDER.fullmatch(text):
            found.setdefault(text, name)
    return found


class Finder:
    """Every detector, compiled into one pattern (one pass over each string)."""

    def __init__(
        self, values: Mapping[str, str] | None = None, home: str | None = None,
        user: str | None = None,
    ) -> None:  # fmt: skip
        """``values``: exact secrets (value -> where it came from); ``home``, ``user``: yours."""
        alternatives: list[str] = []
        self._kinds: list[tuple[str, str, bool]] = []  # group name, kind, has an inner group

        def add(kind: str, pattern: str) -> None:
            name = f"d{len(self._kinds)}"
            inner = "(?P<v>" in pattern
            pattern = pattern.replace("(?P<v>", f"(?P<{name}v>")
            alternatives.append(f"(?P<{name}>{pattern})")
            self._kinds.append((name, kind, inner))

        add("private-key", _PATTERNS[0][1])
        exact = sorted({v for v in (values or {}) if v}, key=len, reverse=True)
        if exact:
            add("env", "|".join(re.escape(v) for v in exact))
        for kind, pattern in _PATTERNS[1:]:
            add(kind, pattern)
        if user and len(user) >= 2:
            if home and not home.rstrip("/\\").endswith(user):
                add("home", re.escape(home.rstrip("/\\")) + r"(?![^/\\\s\"'])")
            add("user", rf"(?<=[/\\])(?P<v>{re.escape(user)})(?![^/\\\s\"'])")
        self._pattern = re.compile("|".join(alternatives))
        extra = [*exact, *(t for t in (home, user) if t and len(t) >= 2)]
        self.triggers = (*_TRIGGERS, *extra)
        self._triggers = re.compile("|".join(re.escape(t) for t in self.triggers))

    def maybe(self, text: str) -> bool:
        """False when ``text`` certainly holds nothing to find (a fast test, no pattern run)."""
        return self._triggers.search(text) is not None

    def find(self, text: str) -> Iterator[Hit]:
        if not self.maybe(text):
            return
        for match in self._pattern.finditer(text):
            name = match.lastgroup
            for group, kind, inner in self._kinds:
                if group != name:
                    continue
                if inner:
                    yield Hit(match.start(group + "v"), match.end(group + "v"), kind)
                else:
                    yield Hit(match.start(), match.end(), kind)
                break

    def search(self, text: str) -> bool:
        return self._pattern.search(text) is not None
