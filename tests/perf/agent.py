"""A fake ACP agent for the performance benchmark (standard library only, runnable as a script).

It speaks newline-delimited JSON-RPC 2.0 on stdin/stdout:

- ``initialize`` gets an initialize response, ``session/new`` a session id, any other request a
  small empty result; notifications and responses from the client are ignored.
- ``session/prompt`` carrying ``params._meta["acp-perf"] = {"shape": SHAPE, "count": N}`` makes
  it write N ``session/update`` notifications of that shape as fast as it can (one ``write`` per
  frame, as an SDK that flushes every message does), then the prompt response. Without that
  field (or with shape ``echo``) the prompt gets its response at once: the ping mode.
- It exits at end of file on stdin. If ``ACP_PERF_AGENT_STATS`` names a file, it first writes
  its own CPU seconds there as JSON, so the client can tell the wrapper's CPU from the agent's.

Every frame of a shape has exactly the same size (``SIZES``), so the client can compute the
exact bytes it must receive (see ``stream_parts``); the client imports this module for that.
"""

from __future__ import annotations

import base64
import json
import os
import random
import resource
import sys
from collections.abc import Iterator, Sequence

SHAPES = ("small", "medium", "large1m", "large16m")
SIZES = {"small": 186, "medium": 4096, "large1m": 1 << 20, "large16m": 16 << 20}
STATS_ENV = "ACP_PERF_AGENT_STATS"
META_KEY = "acp-perf"
SESSION_ID = "sess_01"

# JSON-escaped string content, repeated to fill a text field (a tool's output: code lines).
_CODE_UNIT = b'    result = compute(request.id) + 42  # \\"ok\\"\\n'
# Base64 of fixed pseudo-random bytes: the data of an image content block.
_B64_UNIT = base64.b64encode(random.Random(20240501).randbytes(48 * 1024))
_fill_cache: dict[tuple[str, int], bytes] = {}


def _fill(shape: str, room: int) -> bytes:
    """``room`` bytes of valid JSON string content for ``shape`` (cached: shared by frames)."""
    key = (shape, room)
    if key not in _fill_cache:
        if shape == "medium":
            whole = room // len(_CODE_UNIT)
            _fill_cache[key] = _CODE_UNIT * whole + b" " * (room - whole * len(_CODE_UNIT))
        else:
            reps = room // len(_B64_UNIT) + 1
            _fill_cache[key] = (_B64_UNIT * reps)[:room]
    return _fill_cache[key]


def _head_tail(shape: str, index: int) -> tuple[bytes, bytes]:
    """The bytes before and after the variable-length string of frame ``index``."""
    sid = SESSION_ID.encode()
    if shape == "small":
        head = (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s",'
            b'"update":{"sessionUpdate":"agent_message_chunk",'
            b'"content":{"type":"text","text":"tok %08d ' % (sid, index)
        )
        return head, b'"}}}}\n'
    if shape == "medium":
        head = (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s",'
            b'"update":{"sessionUpdate":"tool_call_update","toolCallId":"call_%08d",'
            b'"status":"in_progress","content":[{"type":"content","content":'
            b'{"type":"text","text":"' % (sid, index)
        )
        return head, b'"}}]}}}\n'
    if shape in ("large1m", "large16m"):
        head = (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s",'
            b'"update":{"sessionUpdate":"agent_message_chunk","messageId":"img_%08d",'
            b'"content":{"type":"image","mimeType":"image/png","data":"' % (sid, index)
        )
        return head, b'"}}}}\n'
    raise ValueError(f"unknown shape {shape!r}")


def frame_parts(shape: str, index: int) -> list[bytes]:
    """Frame ``index`` of ``shape`` as parts to ``writev`` (exactly ``SIZES[shape]`` bytes)."""
    head, tail = _head_tail(shape, index)
    room = SIZES[shape] - len(head) - len(tail)
    if shape == "small":
        filler = b"abcdefghijklmnopqrstuvwxyz" * 8
        return [head + filler[:room] + tail]
    return [head, _fill(shape, room), tail]


def prompt_response(request_id: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}\n' % request_id


def stream_parts(shape: str, count: int, request_id: int) -> Iterator[bytes]:
    """Every byte string the agent writes for one streaming prompt, in order."""
    for index in range(count):
        yield from frame_parts(shape, index)
    yield prompt_response(request_id)


def _response(request_id: object, result: object) -> bytes:
    return (
        json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")
        ).encode()
        + b"\n"
    )


def _write_all(fd: int, parts: Sequence[bytes]) -> None:
    """Write ``parts`` in order, without joining them (a 16 MiB frame is not copied)."""
    views = [memoryview(p) for p in parts if p]
    while views:
        written = os.writev(fd, views)
        while views and written >= len(views[0]):
            written -= len(views[0])
            views.pop(0)
        if written:
            views[0] = views[0][written:]


def _stream(fd: int, shape: str, count: int, request_id: int) -> None:
    for index in range(count):
        _write_all(fd, frame_parts(shape, index))
    _write_all(fd, [prompt_response(request_id)])


def _answer(fd: int, message: dict[str, object]) -> None:
    request_id, method = message["id"], message["method"]
    if method == "initialize":
        result: object = {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": False},
            "authMethods": [],
            "agentInfo": {"name": "acp-perf-agent", "version": "1"},
        }
        _write_all(fd, [_response(request_id, result)])
    elif method == "session/new":
        _write_all(fd, [_response(request_id, {"sessionId": SESSION_ID})])
    elif method == "session/prompt" and isinstance(request_id, int):
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        perf = meta.get(META_KEY) if isinstance(meta, dict) else None
        shape = perf.get("shape", "echo") if isinstance(perf, dict) else "echo"
        if shape == "echo" or not isinstance(perf, dict):
            _write_all(fd, [prompt_response(request_id)])
        else:
            _stream(fd, shape, int(perf.get("count", 0)), request_id)
    else:
        _write_all(fd, [_response(request_id, {})])


def _write_stats() -> None:
    path = os.environ.get(STATS_ENV)
    if not path:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"pid": os.getpid(), "cpu_s": usage.ru_utime + usage.ru_stime}, out)


def main() -> int:
    source = sys.stdin.buffer
    out = sys.stdout.fileno()
    try:
        for line in source:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and "id" in message and "method" in message:
                _answer(out, message)
    except BrokenPipeError:
        pass
    _write_stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
