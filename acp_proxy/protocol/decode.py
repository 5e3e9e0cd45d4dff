"""Sans-I/O: the one JSON decoder for what a peer sent and what a recording holds.

Rules:
- Nothing a peer sent or a file holds makes decoding raise: ``json_or_none`` gives None for
  bytes that are not JSON (and for JSON ``null``: callers never need to tell them apart).
- What it gives can be walked: JSON nested deeper than ``depth.WALK_DEPTH`` is None too, so
  a reader shows its bytes (made visible) instead of walking it; a column that deep stays its
  text.
- ``column_value`` decodes a JSON column of the database (``argv``, ``client_info`` ...): NULL
  stays None, a value that is not text passes through, and text that is not JSON is kept as
  the text itself (an older or foreign writer's value is shown, never lost).
"""

from __future__ import annotations

from typing import Any

import orjson

from acp_proxy.protocol.depth import too_deep


def _too_deep(data: bytes | bytearray | memoryview | str) -> bool:
    if isinstance(data, str):
        return too_deep(data.encode("utf-8", "surrogatepass"))
    return too_deep(data if not isinstance(data, memoryview) else bytes(data))


def json_or_none(data: bytes | bytearray | memoryview | str) -> Any:
    """The decoded value of ``data``, or None when it is not JSON or too deep to walk."""
    if _too_deep(data):
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def json_object(data: bytes | bytearray | memoryview | str) -> dict[str, Any] | None:
    """The decoded value of ``data`` when it is a JSON object, else None."""
    value = json_or_none(data)
    return value if isinstance(value, dict) else None


def column_value(value: Any) -> Any:
    """A JSON column as stored, decoded (see the module rules)."""
    if not isinstance(value, str) or _too_deep(value):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
