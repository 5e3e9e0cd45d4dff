"""Helpers for the remote-transport tests: the SDK servers on free ports, their logs as frames.

* ``PythonServer``: the Python SDK's ``examples/http_server.py`` app under
  ``tools/asgi_tap.py`` (hypercorn on a free loopback port), every exchange logged;
* ``TsServer``: the TypeScript SDK's ``dist/examples/http-server.js`` on a free port;
* ``conversation(log)``: what the tapped server received and sent, as the client saw it:
  the client's messages (POST bodies, WebSocket text) and the agent's (the ``initialize``
  answer, SSE ``data``, WebSocket text), in the order the server logged them;
* ``frames_capture(log)``: that conversation as a JSONL of raw frames (``acp-proxy import``).
* ``run_example(path)``: an argv running one of the Python SDK's remote example clients
  against a URL given in ``ACP_URL`` (the examples name their URL in their code: the argv
  points their transport factories at ACP_URL, nothing else changes).

Every server is stopped by its context manager (SIGTERM, then SIGKILL), never left running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.processes import started

TOOLS = Path(__file__).parent / "tools"
START_TIMEOUT = 20.0


@dataclass(frozen=True)
class Server:
    url: str  # http://127.0.0.1:PORT/acp
    log: Path | None  # the exchanges, for the tapped Python server

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[len("http") :]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def python_server(examples: Path, log: Path) -> Iterator[Server]:
    argv = [sys.executable, str(TOOLS / "asgi_tap.py"), str(log)]
    argv.append(f"{examples / 'http_server.py'}:app")
    with started(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
        try:
            assert process.stdout is not None
            port = process.stdout.readline().strip().decode()
            assert port.isdigit(), f"the tapped server did not start (said {port!r})"
            yield Server(f"http://127.0.0.1:{port}/acp", log)
        finally:
            _stop(process)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def ts_server(node: str, sdk: Path) -> Iterator[Server]:
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    script = sdk / "dist" / "examples" / "http-server.js"
    with started([node, str(script)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as process:  # fmt: skip
        try:
            assert process.stdout is not None
            said = process.stdout.readline().decode()
            assert f":{port}/acp" in said, f"the TypeScript server did not start (said {said!r})"
            yield Server(f"http://127.0.0.1:{port}/acp", None)
        finally:
            _stop(process)


def read_log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def sse_data(chunk: bytes) -> list[bytes]:
    """The data of each event in an SSE chunk (the server sends whole events per chunk)."""
    events = []
    for block in chunk.split(b"\n\n"):
        lines = [
            line[len(b"data: ") :] for line in block.split(b"\n") if line.startswith(b"data: ")
        ]
        if lines:
            events.append(b"\n".join(lines))
    return events


def conversation(log: Path) -> list[tuple[str, bytes]]:
    """(direction, message bytes) in the order the server logged them (see the module doc)."""
    messages: list[tuple[str, bytes]] = []
    for record in read_log(log):
        kind = record["kind"]
        if kind == "post_in":
            messages.append(("c2a", record["body"].encode("latin-1")))
        elif kind == "post_out" and record["status"] == 200 and record["answer"]:
            messages.append(("a2c", record["answer"].encode("latin-1")))
        elif kind == "sse":
            messages += [("a2c", data) for data in sse_data(record["chunk"].encode("latin-1"))]
        elif kind == "ws_in":
            messages.append(("c2a", record["text"].encode()))
        elif kind == "ws_out":
            messages.append(("a2c", record["text"].encode()))
    return messages


def frames_capture(log: Path, out: Path) -> Path:
    lines = [json.dumps({"direction": d, "raw": raw.decode()}) for d, raw in conversation(log)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


RUN_EXAMPLE = """
import os, runpy, sys
import acp.http, acp.ws
url = os.environ["ACP_URL"]
http_stream, ws_stream = acp.http.create_http_stream, acp.ws.create_websocket_stream
acp.http.create_http_stream = lambda _url, **options: http_stream(url, **options)
acp.ws.create_websocket_stream = lambda _url, **options: ws_stream(url, **options)
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def run_example(path: Path) -> list[str]:
    return [sys.executable, "-c", RUN_EXAMPLE, str(path)]
