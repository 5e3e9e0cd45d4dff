"""Sans-I/O: a remote connection's transport facts redacted like the rest of a bug report.

Rules:
- What an export carries of an HTTP exchange (store/transport_facts.py) is redacted in place:
  the value of a credential header (``Authorization``, cookies, API keys ..., as
  protocol/credentials.py names them) is replaced whole by a placeholder (``header`` kind) whatever
  it looks like, since the recorder kept it only because it was asked to; every other header
  value, the request target (its query may hold a token), a stored answer body and an error
  text go through the redactor's detectors like any recorded text.
- Header names, methods, statuses, streams and times are kept: they are what the transport
  rules and a reader judge by.
- Returns the JSON paths it changed (``transport.exchanges[N].request_headers[M]`` ...).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.protocol.credentials import is_credential
from acp_proxy.share.redact import Redactor

HEADER_KIND = "header"
TEXT_FIELDS = ("target", "body", "error")


def redact_transport(redactor: Redactor, transport: dict[str, Any]) -> list[str]:
    changed: list[str] = []
    for index, exchange in enumerate(transport.get("exchanges") or []):
        if not isinstance(exchange, dict):
            continue
        where = f"transport.exchanges[{index}]"
        for field in TEXT_FIELDS:
            value = exchange.get(field)
            if isinstance(value, str):
                new = redactor.text(value, f"{where}.{field}")
                if new != value:
                    exchange[field] = new
                    changed.append(f"{where}.{field}")
        for field in ("request_headers", "response_headers"):
            headers = exchange.get(field)
            if isinstance(headers, list):
                changed += _headers(redactor, headers, f"{where}.{field}")
    return changed


def _headers(redactor: Redactor, headers: list[Any], where: str) -> list[str]:
    changed: list[str] = []
    for index, pair in enumerate(headers):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
            continue
        name, value = pair
        path = f"{where}[{index}]"
        if isinstance(name, str) and is_credential(name.encode("latin-1", "replace")):
            new = redactor.placeholder(HEADER_KIND, value)
        else:
            new = redactor.text(value, path)
        if new != value:
            pair[1] = new
            changed.append(path)
    return changed
