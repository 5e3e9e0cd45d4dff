"""Sans-I/O: captures made by other tools, read as the frames that crossed the wire.

Rules:
- ``detect`` names the format from the first non-blank line (and, for whole JSON documents,
  from the document): ``frames`` (a JSONL of raw frames), ``sacp-trace`` (the NDJSON trace
  of sacp-conductor), ``zed-log`` (the JSON array Zed's ACP log panel copies),
  ``acp-devtools`` (the session export JSON of acp-devtools), ``export`` (acp-proxy's own
  JSONL export, imported elsewhere), or None.
- ``read(fmt, data)`` gives a ``Capture``: what is known of the connection and its frames in
  order, each with its direction, its bytes and its times when the file has them. Nothing
  else is taken from the file: parsed columns are derived later by the recorder's own observer.
- Where the tool kept the exact line (``frames``, ``acp-devtools``) those bytes are the frame
  (a newline added, as the tools strip it). Where it kept only the parsed message
  (``sacp-trace``, ``zed-log``) the frame is that message written back as compact JSON-RPC
  (``{"jsonrpc":"2.0","id":..,"method":..,"params":..}``): the same message, not the same bytes.
- Times: ``mono_ns`` is relative (any origin), ``wall_ns`` absolute; a format with only one of
  them derives the other from the capture's start; a frame without times takes its
  predecessor's. Numbers must be integers (or, for seconds and milliseconds, numbers) in range.
- Input never raises anything but ``CaptureError`` (with the line or item number); a value of
  the wrong type is refused, never guessed.
"""

from __future__ import annotations

import base64
import binascii
import math
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.protocol.acp import Direction

FORMATS = ("frames", "sacp-trace", "zed-log", "acp-devtools")
_INT64 = 2**63 - 1
_DIRECTIONS = {d.value: d for d in Direction}
_SACP_TYPES = frozenset({"request", "response", "notification", "trace"})


class CaptureError(ValueError):
    """The file is not a capture of the format it looks like."""


@dataclass(frozen=True, slots=True)
class CapturedFrame:
    direction: Direction
    raw: bytes
    mono_ns: int | None = None
    wall_ns: int | None = None


@dataclass(slots=True)
class Capture:
    """What a capture says of its connection; ``frames`` is consumed once, in order."""

    fmt: str
    tool: str  # the tool that made it, with its version when the file says
    frames: Iterator[CapturedFrame]
    label: str | None = None
    argv: list[str] = field(default_factory=list)
    started_ns: int | None = None
    ended_ns: int | None = None


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def detect(first_line: bytes, document: Any = None) -> str | None:
    """The format of a file whose first non-blank line is ``first_line`` (see module rules).

    ``document`` is the whole file parsed as JSON, for files whose first line is not a whole
    JSON object (a pretty-printed array or object).
    """
    head = _object(first_line)
    if head is not None:
        if "format" in head:
            return "export"
        if "direction" in head and ("raw" in head or "raw_base64" in head):
            return "frames"
        kind = head.get("type")
        if isinstance(kind, str) and kind in _SACP_TYPES and "ts" in head:
            return "sacp-trace"
    if isinstance(document, list) and all(
        isinstance(item, dict) and "_direction" in item for item in document[:1]
    ):
        return "zed-log"
    if (
        isinstance(document, dict) and isinstance(document.get("messages"), list)
        and isinstance(document.get("session"), dict) and "version" in document
    ):  # fmt: skip
        return "acp-devtools"
    return None


def read(fmt: str, lines: Iterable[bytes], document: Any = None) -> Capture:
    """The capture in ``lines`` (or the parsed ``document``) of format ``fmt``."""
    if fmt == "frames":
        return Capture(fmt, "JSONL of raw frames", _frames(lines))
    if fmt == "sacp-trace":
        return Capture(fmt, "sacp-conductor trace", _sacp(lines))
    if fmt == "zed-log":
        return Capture(fmt, "Zed ACP log", _zed(document))
    if fmt == "acp-devtools":
        return _devtools(document)
    raise CaptureError(f"unknown capture format {fmt!r}")


# ------------------------------------------------------------------------------ helpers


def _int(value: Any, where: str, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _INT64:
        raise CaptureError(f"{where}: {name} must be a whole number of nanoseconds, not {value!r}")
    return value


def _scaled(value: Any, where: str, name: str, unit_ns: int) -> int | None:
    """A time in seconds or milliseconds (``unit_ns`` per unit) as nanoseconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise CaptureError(f"{where}: {name} must be a number, not {value!r}")
    if math.isinf(value) or not 0 <= value * unit_ns <= _INT64:
        raise CaptureError(f"{where}: {name} is out of range: {value!r}")
    scaled = round(value * unit_ns)
    if not 0 <= scaled <= _INT64:
        raise CaptureError(f"{where}: {name} is out of range: {value!r}")
    return scaled


def _lookup(table: dict[str, Direction], value: Any) -> Direction | None:
    return table.get(value) if isinstance(value, str) else None


def _lines(lines: Iterable[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        item = _object(line)
        if item is None:
            raise CaptureError(f"line {number}: not a JSON object")
        yield number, item


def _rpc(id_value: Any, *, method: str | None = None, params: Any = None,
         result: Any = None, error: Any = None, kind: str) -> bytes:  # fmt: skip
    """A JSON-RPC message written back from its parts (see module rules)."""
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind != "notification":
        message["id"] = id_value
    if kind in ("request", "notification"):
        message["method"] = method
        if params is not None:
            message["params"] = params
    elif kind == "error":
        message["error"] = error
    else:
        message["result"] = result
    try:
        return orjson.dumps(message) + b"\n"
    except TypeError as failure:  # numbers past 64 bits: orjson writes no such integers
        raise CaptureError(f"a message cannot be written back as JSON: {failure}") from failure


# ------------------------------------------------------------------------------ frames


def _frames(lines: Iterable[bytes]) -> Iterator[CapturedFrame]:
    """One JSON object per line: ``direction`` (c2a, a2c or stderr), ``raw`` (the line as
    text) or ``raw_base64``, optional ``mono_ns`` and ``wall_ns``, optional ``no_newline``."""
    for number, item in _lines(lines):
        where = f"line {number}"
        direction = _lookup(_DIRECTIONS, item.get("direction"))
        if direction is None:
            raise CaptureError(f'{where}: "direction" must be c2a, a2c or stderr')
        if "raw_base64" in item:
            encoded = item["raw_base64"]
            try:
                raw = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else None
            except (binascii.Error, ValueError):
                raw = None
            if raw is None:
                raise CaptureError(f'{where}: "raw_base64" is not base64 text')
        elif isinstance(item.get("raw"), str):
            raw = item["raw"].encode("utf-8", "surrogatepass")
        else:
            raise CaptureError(f'{where}: a frame needs "raw" (text) or "raw_base64"')
        no_newline = item.get("no_newline", False)
        if not isinstance(no_newline, bool | int):
            raise CaptureError(f'{where}: "no_newline" must be true or false')
        mono = _int(item.get("mono_ns"), where, "mono_ns")
        wall = _int(item.get("wall_ns"), where, "wall_ns")
        pieces = raw.split(b"\n")  # a line holding several frames is cut as the wire cuts it
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if last and not piece and index:
                break  # the raw ended with its newline
            ending = b"" if last and no_newline else b"\n"
            yield CapturedFrame(direction, piece + ending, mono, wall)


# ------------------------------------------------------------------------------ sacp-conductor


def _sacp(lines: Iterable[bytes]) -> Iterator[CapturedFrame]:
    """sacp-conductor's trace events: the client's side of the conductor (from or to
    ``client``); hops between proxies and the agent, MCP-over-ACP and log events are left out.
    ``ts`` is seconds since the trace started."""
    for number, event in _lines(lines):
        where = f"line {number}"
        kind = event.get("type")
        if not isinstance(kind, str) or kind not in _SACP_TYPES:
            raise CaptureError(f"{where}: not a sacp-conductor trace event (type {kind!r})")
        if kind == "trace":
            continue
        source, target = event.get("from"), event.get("to")
        if source == "client":
            direction = Direction.CLIENT_TO_AGENT
        elif target == "client":
            direction = Direction.AGENT_TO_CLIENT
        else:
            continue
        mono = _scaled(event.get("ts"), where, "ts", 10**9)
        if kind == "response":
            is_error = event.get("is_error")
            if not isinstance(is_error, bool):
                raise CaptureError(f"{where}: is_error must be true or false")
            payload = event.get("payload")
            raw = _rpc(event.get("id"), result=payload, error=payload,
                       kind="error" if is_error else "response")  # fmt: skip
        else:
            method = event.get("method")
            if not isinstance(method, str):
                raise CaptureError(f"{where}: a {kind} event needs a method")
            raw = _rpc(event.get("id"), method=method, params=event.get("params"), kind=kind)
        yield CapturedFrame(direction, raw, mono)


# ------------------------------------------------------------------------------ Zed


def _zed_error(payload: Any) -> bool:
    """Whether a response's ``params`` is the error Zed serialized (``{code, message[, data]}``)
    rather than a result: Zed's copy does not say which, and no ACP result has this shape."""
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("code"), int)
        and isinstance(payload.get("message"), str)
        and set(payload) <= {"code", "message", "data"}
    )


def _zed(document: Any) -> Iterator[CapturedFrame]:
    """Zed's "Copy All Messages": ``_direction`` (outgoing: Zed, the client, sent it),
    ``_type`` (request, response, notification), ``id``, ``method`` and ``params`` (for a
    response, its result or error). No times."""
    if not isinstance(document, list):
        raise CaptureError("a Zed ACP log is a JSON array")
    for number, item in enumerate(document, start=1):
        where = f"message {number}"
        if not isinstance(item, dict):
            raise CaptureError(f"{where}: not a JSON object")
        side = item.get("_direction")
        if not isinstance(side, str) or side not in ("incoming", "outgoing"):
            raise CaptureError(f'{where}: "_direction" must be incoming or outgoing')
        direction = Direction.CLIENT_TO_AGENT if side == "outgoing" else Direction.AGENT_TO_CLIENT
        kind = item.get("_type")
        kind = kind if isinstance(kind, str) else None
        params = item.get("params")
        if kind == "response":
            kind = "error" if _zed_error(params) else "response"
            raw = _rpc(item.get("id"), result=params, error=params, kind=kind)
        elif kind in ("request", "notification"):
            method = item.get("method")
            if not isinstance(method, str):
                raise CaptureError(f"{where}: a {kind} needs a method")
            raw = _rpc(item.get("id"), method=method, params=params, kind=kind)
        else:
            raise CaptureError(f'{where}: "_type" must be request, response or notification')
        yield CapturedFrame(direction, raw)


# ------------------------------------------------------------------------------ acp-devtools


def _devtools(document: Any) -> Capture:
    """acp-devtools' session export (``version`` 1): ``session`` (name, agentCommand,
    startedAt, endedAt in Unix milliseconds) and ``messages`` (``direction`` editor-to-agent or
    agent-to-editor, ``raw``: the line without its newline, ``timestamp`` in Unix ms)."""
    if document.get("version") != 1:
        raise CaptureError(f"acp-devtools export version {document.get('version')!r} is not 1")
    session, tool = document["session"], document.get("tool")
    name = tool.get("name") if isinstance(tool, dict) else None
    version = tool.get("version") if isinstance(tool, dict) else None
    label = session.get("name") if isinstance(session.get("name"), str) else None
    command = session.get("agentCommand")
    argv = shlex.split(command) if isinstance(command, str) and _splits(command) else []
    if isinstance(command, str) and not argv and command.strip():
        argv = [command]
    started = _scaled(session.get("startedAt"), "session", "startedAt", 10**6)
    ended = _scaled(session.get("endedAt"), "session", "endedAt", 10**6)
    tool_name = " ".join(str(p) for p in (name or "acp-devtools", version) if p)
    frames = _devtools_messages(document["messages"])
    return Capture("acp-devtools", tool_name, frames, label, argv, started, ended)


def _splits(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:
        return False
    return True


def _devtools_messages(messages: list[Any]) -> Iterator[CapturedFrame]:
    sides = {"editor-to-agent": Direction.CLIENT_TO_AGENT,
             "agent-to-editor": Direction.AGENT_TO_CLIENT}  # fmt: skip
    for number, message in enumerate(messages, start=1):
        where = f"messages[{number - 1}]"
        if not isinstance(message, dict):
            raise CaptureError(f"{where}: not a JSON object")
        direction = _lookup(sides, message.get("direction"))
        if direction is None:
            raise CaptureError(f"{where}: direction must be editor-to-agent or agent-to-editor")
        raw = message.get("raw")
        if not isinstance(raw, str):
            raise CaptureError(f"{where}: raw must be a string")
        wall = _scaled(message.get("timestamp"), where, "timestamp", 10**6)
        yield CapturedFrame(direction, raw.encode("utf-8", "surrogatepass") + b"\n", None, wall)
