"""The inspector's gate: the token of the address, the Host header, and the response headers.

Rules:
- Every request's path starts with ``/<token>/`` (the random token printed in the address);
  any other path is refused with 403 before any route runs, the compared token in constant
  time. Relative URLs in the page keep the token, so no cookie is needed.
- The Host header must name the address served (``127.0.0.1:PORT``, ``localhost:PORT``,
  ``[::1]:PORT``, or the ``--host`` given): a page on another name that resolves here (DNS
  rebinding) is refused with 403.
- Only GET and HEAD: nothing served changes anything.
- Every response carries a Content-Security-Policy that runs only the package's own scripts
  (its files, and the page's one inline start-up script named by its hash: never any other
  inline script), ``nosniff``, no referrer and no framing; API answers are not cached (the
  page's own files, named with their version, are: app.py).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def csp(script_hashes: Iterable[str] = ()) -> str:
    """The policy: scripts from the page's own files and the inline scripts whose
    ``sha256-...`` hashes are given, nothing else from anywhere."""
    scripts = " ".join(["'self'", *(f"'{h}'" for h in script_hashes)])
    return (
        f"default-src 'none'; script-src {scripts}; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def new_token() -> str:
    return secrets.token_urlsafe(24)


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    names = {"127.0.0.1", "localhost", "[::1]"}
    if host not in ("127.0.0.1", "localhost", "::1"):
        names.add(f"[{host}]" if ":" in host else host)
    return frozenset(f"{name}:{port}".lower() for name in names)


class Gate:
    """ASGI middleware applying the module rules in front of ``app``."""

    def __init__(
        self, app: App, token: str, hosts: Iterable[str], script_hashes: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.headers = [(b"content-security-policy", csp(script_hashes).encode()), *HEADERS]
        self.token = token
        self.prefix = f"/{token}"
        self.hosts = frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        host = ""
        for name, value in scope.get("headers", []):
            if name == b"host":
                host = value.decode("latin-1").lower()
        if host not in self.hosts:
            await _refuse(send, 403, "this address is not served here (Host header)", self.headers)
            return
        path: str = scope.get("path", "")
        given, _, rest = path.lstrip("/").partition("/")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            await _refuse(
                send,
                403,
                "a valid token is required: open the address acp-proxy printed",
                self.headers,
            )
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _refuse(send, 405, "read-only: only GET is served", self.headers)
            return
        if not path.startswith(self.prefix + "/"):
            await _redirect(send, self.prefix + "/", self.headers)
            return
        inner = dict(scope)
        inner["root_path"] = scope.get("root_path", "") + self.prefix
        api = rest.startswith("api/")
        extra = self.headers

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += extra
                if api:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(inner, receive, send_with_headers)


async def _refuse(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode()), *extra]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, extra: list[tuple[bytes, bytes]]) -> None:
    headers = [(b"location", location.encode()), (b"content-length", b"0"), *extra]
    await send({"type": "http.response.start", "status": 307, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
