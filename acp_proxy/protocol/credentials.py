"""Sans-I/O: which HTTP headers carry credentials (never recorded, always redacted).

Rules:
- ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``, ``X-Api-Key`` and
  ``Api-Key``, and any header whose name says token, secret, password, auth, api key or
  credential. ``Acp-Connection-Id`` and ``Acp-Session-Id`` (any ``Acp-`` header) are routing
  ids, not credentials.
- Names are compared without case. The recorder (remote/headers.py) and the redaction of
  exports (share/redact_transport.py) both ask here, so they never disagree.
"""

from __future__ import annotations

CREDENTIALS = frozenset({
    b"authorization", b"proxy-authorization", b"cookie", b"set-cookie", b"x-api-key",
    b"api-key",
})  # fmt: skip
_CREDENTIAL_WORDS = (b"token", b"secret", b"password", b"passwd", b"auth", b"apikey",
                     b"api-key", b"api_key", b"credential")  # fmt: skip


def is_credential(name: bytes) -> bool:
    lowered = name.lower()
    if lowered in CREDENTIALS:
        return True
    if lowered.startswith(b"acp-"):
        return False
    return any(word in lowered for word in _CREDENTIAL_WORDS)
