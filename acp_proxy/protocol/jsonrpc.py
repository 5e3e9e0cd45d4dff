"""Sans-I/O JSON-RPC 2.0 classification of one frame, and request/response correlation.

Rules:
- ``classify(raw)`` never raises on peer input: any bytes become a message value. Lines that are
  not JSON (or not UTF-8) become ``Unparseable``; JSON that fits no JSON-RPC shape becomes
  ``Invalid``; arrays become ``Batch`` (each entry classified on its own).
- Ids stay exactly as sent: ``1`` and ``"1"`` are different ids, and so are ``1`` and ``true``.
  ``id_key()`` gives a hashable key that keeps the JSON type. orjson reads an integer wider
  than 64 bits as a float; a message whose id came back a float is parsed again by the exact
  parser, so such an id stays the integer it was. Other numbers that wide are floats in the
  parsed value (the frame's bytes keep them whole).
- A message whose ``"jsonrpc"`` member is not ``"2.0"`` keeps its shape but is flagged.
- A response carries no method: ``Correlator`` remembers, per direction, which request each id
  was sent with, so the answer travelling the other way can be named. It is the only
  correlator: the observer owns one per connection and every reader gets its verdict from there.
- A message with both ``result`` and ``error`` is an ``error`` (JSON-RPC 2.0 forbids both; the
  error member is the one that says the call failed).
- JSON of any depth is classified (protocol/depth.py): a frame valid but nested too deep to
  walk is a message like any other, its deepest values cut from the parsed value only.
- This module knows no process, clock or database.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

import orjson

from acp_proxy.protocol.depth import bounded, checkable, too_deep

JsonId = str | int | float | None


class Kind(StrEnum):
    """What a frame is, as JSON-RPC sees it. Stored as text in recordings."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    ERROR = "error"
    BATCH = "batch"
    INVALID = "invalid"  # JSON, but no JSON-RPC shape
    UNPARSEABLE = "unparseable"  # not JSON at all, or not UTF-8


@dataclass(frozen=True, slots=True)
class Request:
    id: JsonId
    method: str
    params: Any
    jsonrpc_ok: bool = True
    kind: Kind = Kind.REQUEST


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Any
    jsonrpc_ok: bool = True
    kind: Kind = Kind.NOTIFICATION


@dataclass(frozen=True, slots=True)
class Response:
    id: JsonId
    result: Any
    jsonrpc_ok: bool = True
    kind: Kind = Kind.RESPONSE


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    id: JsonId
    code: Any  # an integer from a well-behaved peer; kept as sent otherwise
    message: Any
    data: Any
    jsonrpc_ok: bool = True
    kind: Kind = Kind.ERROR


@dataclass(frozen=True, slots=True)
class Invalid:
    """Valid JSON that is not a JSON-RPC message (also used for bad batch entries)."""

    value: Any
    reason: str
    jsonrpc_ok: bool = False
    kind: Kind = Kind.INVALID


@dataclass(frozen=True, slots=True)
class Batch:
    items: tuple[Message, ...]
    jsonrpc_ok: bool = True
    kind: Kind = Kind.BATCH


@dataclass(frozen=True, slots=True)
class Unparseable:
    """Bytes that are not one JSON value. ``bad_utf8`` says the bytes are not even UTF-8."""

    reason: str
    bad_utf8: bool
    jsonrpc_ok: bool = False
    kind: Kind = Kind.UNPARSEABLE


Message = Request | Notification | Response | ErrorResponse | Invalid | Batch | Unparseable


def id_key(value: JsonId) -> tuple[str, JsonId]:
    """A hashable key for an id that keeps its JSON type (``1``, ``1.0`` and ``"1"`` differ)."""
    return (type(value).__name__, value)


def _valid_id(value: object) -> bool:
    # bool is an int subclass in Python but not a JSON-RPC id type.
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


# Frames at least this large are first parsed as a skeleton (see ``skeleton``).
SKELETON_MIN_SIZE = 256 * 1024
# Strings at least this long are left out of a skeleton.
SKELETON_MIN_STRING = 4096
# A skeleton is only worth it when quotes are rare (images, base64, long plain text).
SKELETON_MAX_QUOTES = 4096
# Long strings are checked in windows of this size: a slice of a 16 MiB string would be a
# 16 MiB copy, held beside the frame itself.
_PLAIN_WINDOW = 256 * 1024


def skeleton(raw: bytes | bytearray) -> bytes | None:
    """``raw`` with the contents of its long plain strings removed, or None.

    The structure, the keys and every short value stay as they are, so the parsed skeleton
    answers every question about the envelope (kind, id, method, session, update kind) without
    materialising megabytes of content. A long string is left out only when it is plain ASCII
    without escapes, whose only possible defect as JSON (a raw control character) does not
    matter for the envelope. None when the frame has too many quotes for this to pay off.
    """
    if raw.count(b'"') > SKELETON_MAX_QUOTES:
        return None
    pieces: list[bytes | bytearray] = []
    kept = 0  # raw[:kept] is accounted for
    position = raw.find(b'"')
    while position >= 0:
        end = raw.find(b'"', position + 1)
        while end > 0 and _escaped(raw, end):
            end = raw.find(b'"', end + 1)
        if end < 0:
            return None  # an unterminated string: let the full parser say what is wrong
        long_plain = end - position > SKELETON_MIN_STRING and _plain(raw, position + 1, end)
        if long_plain and not _is_key(raw, end):
            pieces.append(raw[kept : position + 1])
            kept = end
        position = raw.find(b'"', end + 1)
    if not pieces:
        return None
    pieces.append(raw[kept:])
    return b"".join(pieces)


def _plain(raw: bytes | bytearray, start: int, end: int) -> bool:
    """Whether ``raw[start:end]`` is ASCII without a backslash (checked without copying it)."""
    if raw.find(b"\\", start, end) >= 0:
        return False
    return all(
        raw[at : min(at + _PLAIN_WINDOW, end)].isascii() for at in range(start, end, _PLAIN_WINDOW)
    )


def _is_key(raw: bytes | bytearray, closing_quote: int) -> bool:
    """Whether the string ending at ``closing_quote`` is an object key (a colon follows)."""
    at = closing_quote + 1
    while at < len(raw) and raw[at] in b" \t\r\n":
        at += 1
    return raw[at : at + 1] == b":"


def _escaped(raw: bytes | bytearray, quote: int) -> bool:
    """Whether the quote at ``quote`` is escaped (preceded by an odd run of backslashes)."""
    run = 0
    at = quote - 1
    while at >= 0 and raw[at] == 0x5C:
        run += 1
        at -= 1
    return run % 2 == 1


# What ``parse_json`` gives for bytes that are not JSON (``None`` is JSON's null).
NOT_JSON: Any = object()


def parse_json(raw: bytes) -> Any:
    """The JSON value of ``raw``, or ``NOT_JSON`` (orjson only: for comparing and rewriting
    frames, where ``decode``'s second opinion on odd input is not needed)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return NOT_JSON


def is_request(value: Any) -> bool:
    """Whether a parsed value has a request's shape (a method and an id)."""
    return isinstance(value, dict) and "method" in value and "id" in value


def decode(raw: bytes | bytearray) -> tuple[Any, Unparseable | None]:
    """Parse one line as JSON. Returns ``(value, None)`` or ``(None, Unparseable)``.

    Large frames are parsed as a skeleton when that is possible (same envelope, long plain
    strings emptied); anything the skeleton cannot settle goes to the full parsers. A line
    those parsers refuse for its depth alone is valid JSON all the same: it is checked token
    by token and its value cut at ``depth.WALK_DEPTH`` (``depth.bounded``).
    """
    if len(raw) >= SKELETON_MIN_SIZE:
        outline = skeleton(raw)
        if outline is not None:
            try:
                return _with_exact_ids(orjson.loads(outline), outline), None
            except orjson.JSONDecodeError:
                pass  # the full parse below says what is wrong
    try:
        return _with_exact_ids(orjson.loads(raw), raw), None
    except orjson.JSONDecodeError as fast_error:
        # orjson refuses a few things JSON allows (lone surrogate escapes, nesting past its
        # limit); ask the strict parsers before calling the line broken. This path only runs
        # on odd input.
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, Unparseable("not UTF-8", bad_utf8=True)
        if too_deep(raw):
            value = bounded(raw)
            if value is not None:
                return value, None
            if not checkable(raw):
                return None, Unparseable("nested too deep to check at this size", bad_utf8=False)
            return None, Unparseable(f"not JSON: {fast_error}", bad_utf8=False)
        try:
            return json.loads(text, parse_constant=_reject_constant), None
        except (ValueError, RecursionError):
            reason = "empty line" if not text.strip() else f"not JSON: {fast_error}"
            return None, Unparseable(reason, bad_utf8=False)


def _has_float_id(value: Any) -> bool:
    if isinstance(value, dict):
        return isinstance(value.get("id"), float)
    if isinstance(value, list):
        return any(isinstance(item, dict) and isinstance(item.get("id"), float) for item in value)
    return False


def _with_exact_ids(value: Any, raw: bytes | bytearray) -> Any:
    """``value`` as orjson read it, unless an id came back a float: then the exact parse.

    A float id is rare in JSON-RPC and may be an integer too wide for orjson, which it
    approximates; the standard parser keeps integers whole. Only the envelope is looked at,
    so this costs nothing on ordinary frames.
    """
    if not _has_float_id(value):
        return value
    try:
        return json.loads(bytes(raw).decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return value


def decode_for_reading(raw: bytes | bytearray) -> tuple[Any, Unparseable | None]:
    """``decode`` for code that walks the value: one nesting deeper than ``WALK_DEPTH`` comes
    back cut at that depth. The recorder's hot path reads only the envelope: it uses
    ``decode``, and never pays for measuring the depth."""
    if too_deep(raw):
        value = bounded(raw)
        if value is not None:
            return value, None
        reason = "not JSON" if checkable(raw) else "nested too deep to read at this size"
        return None, Unparseable(reason, bad_utf8=not _is_utf8(raw))
    return decode(raw)


def _is_utf8(raw: bytes | bytearray) -> bool:
    try:
        bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class Envelope(NamedTuple):
    """The JSON-RPC shape of one parsed value, without building message objects.

    ``payload`` is the params (request, notification), the result (response), the error object
    (error), the entries (batch) or the reason (invalid). This is the one place where the
    shape rules live; ``classify_value`` and the recorder's hot path both use it.
    """

    kind: Kind
    id: JsonId
    method: str | None
    payload: Any
    jsonrpc_ok: bool


# Envelope(...) without its Python-level __new__: the recorder reads one per frame.
_shape: Callable[[tuple[Any, ...]], Envelope] = functools.partial(tuple.__new__, Envelope)


def envelope(value: Any) -> Envelope:
    """The JSON-RPC shape of an already-parsed JSON value. Never raises."""
    if type(value) is not dict:
        if isinstance(value, list):
            return _shape((Kind.BATCH, None, None, value, bool(value)))
        if not isinstance(value, dict):
            return _shape((Kind.INVALID, None, None, "not a JSON object", False))
    jsonrpc_ok = value.get("jsonrpc") == "2.0"
    method = value.get("method")
    has_id = "id" in value
    msg_id = value.get("id")
    if has_id and not _valid_id(msg_id):
        return _shape((Kind.INVALID, None, None, "id is not a string, number or null", False))
    if method is not None:
        if type(method) is not str:
            return _shape((Kind.INVALID, None, None, "method is not a string", False))
        if has_id:
            return _shape((Kind.REQUEST, msg_id, method, value.get("params"), jsonrpc_ok))
        return _shape((Kind.NOTIFICATION, None, method, value.get("params"), jsonrpc_ok))
    if not has_id:
        return _shape((Kind.INVALID, None, None, "neither method nor id", False))
    if "error" in value:
        error = value["error"]
        if isinstance(error, dict):
            return _shape((Kind.ERROR, msg_id, None, error, jsonrpc_ok))
        return _shape((Kind.INVALID, None, None, "error is not an object", False))
    if "result" in value:
        return _shape((Kind.RESPONSE, msg_id, None, value["result"], jsonrpc_ok))
    return _shape((Kind.INVALID, None, None, "id without method, result or error", False))


def classify_value(value: Any) -> Message:
    """Classify an already-parsed JSON value."""
    kind, msg_id, method, payload, jsonrpc_ok = envelope(value)
    if kind is Kind.NOTIFICATION:
        assert method is not None
        return Notification(method, payload, jsonrpc_ok)
    if kind is Kind.REQUEST:
        assert method is not None
        return Request(msg_id, method, payload, jsonrpc_ok)
    if kind is Kind.RESPONSE:
        return Response(msg_id, payload, jsonrpc_ok)
    if kind is Kind.ERROR:
        return ErrorResponse(
            msg_id, payload.get("code"), payload.get("message"), payload.get("data"), jsonrpc_ok
        )
    if kind is Kind.BATCH:
        return Batch(tuple(classify_value_entry(item) for item in payload), jsonrpc_ok)
    return Invalid(value, payload)


def classify_value_entry(value: Any) -> Message:
    """Classify one entry of a batch (a nested array is not a message)."""
    if isinstance(value, list):
        return Invalid(value, "not a JSON object")
    return classify_value(value)


def classify(raw: bytes | bytearray) -> Message:
    """Classify one frame's raw bytes. Never raises on peer input."""
    value, failure = decode(raw)
    if failure is not None:
        return failure
    return classify_value(value)


@dataclass(frozen=True, slots=True, eq=False)
class PendingRequest:
    """A request still waiting for its answer: what the answer needs to know about it.

    Compared and hashed by identity: two requests sent with the same values are still two.
    """

    method: str
    seq: int
    direction: str = ""  # the way the request travelled (the observer: ``c2a`` or ``a2c``)
    session_id: str | None = None
    params: Any = None
    id: JsonId = None


PendingKey = tuple[str, tuple[str, JsonId]]


class Correlator:
    """Remembers outstanding requests per direction so responses can be named.

    ``sent(direction, id, ...)`` records a request that travelled ``direction`` and returns the
    unanswered request it replaces (same direction and id), if any: the later request is the one
    a peer would answer next. ``answered(direction, id)`` looks up the request that travelled
    ``direction`` and that a response (travelling the other way) now answers, and forgets it.
    ``pending`` is the table itself, keyed by ``(direction, id_key(id))``, for readers.
    """

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[PendingKey, PendingRequest] = {}

    def sent(
        self,
        direction: str,
        request_id: JsonId,
        method: str,
        seq: int,
        session_id: str | None = None,
        params: Any = None,
    ) -> PendingRequest | None:
        key = (direction, id_key(request_id))
        pending = self.pending
        earlier = pending.get(key)
        pending[key] = PendingRequest(method, seq, direction, session_id, params, request_id)
        return earlier

    def answered(self, direction: str, request_id: JsonId) -> PendingRequest | None:
        return self.pending.pop((direction, id_key(request_id)), None)

    def outstanding(self) -> int:
        return len(self.pending)
