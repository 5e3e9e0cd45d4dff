"""Remote ACP peers for the tests: both SDKs' example servers and clients, and the listener.

- ``python_server`` serves the Python SDK's ``examples/http_server.py`` app (hypercorn, h2
  enabled) and ``ts_server`` runs the TypeScript SDK's ``dist/examples/http-server.js``, each on
  a port of its own; both speak Streamable HTTP and WebSocket on ``/acp``.
- ``python_client`` / ``ts_client`` give the argv and environment of an example client
  (``http_client.py``, ``ws_client.py``; ``http-client.js``, ``ws-client.js``) aimed at a URL.
- ``Listener`` runs ``acp-proxy record --listen 127.0.0.1:0 --upstream URL`` and reads the
  address it says; stopping it sends SIGINT and waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.processes import run_to_end

REPO = Path(__file__).resolve().parents[2]
TOOLS = Path(__file__).parent / "tools"
START_S = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited ({process.returncode}) before it listened")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    pytest.fail(f"nothing listens on {port} after {START_S}s")


def env() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [environment.get("PYTHONPATH")])]
    )
    environment["PYTHONIOENCODING"] = "utf-8"
    return environment


@contextlib.contextmanager
def serving(argv: Sequence[str], port: int, extra: dict[str, str] | None = None) -> Iterator[str]:
    """A server program started from ``argv`` to listen on ``port`` (``extra``: environment
    beside the tests' own); yields its ``/acp`` URL once the port answers, and ends it."""
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**env(), **(extra or {})},
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def python_server(
    examples: Path, port: int | None = None
) -> contextlib.AbstractContextManager[str]:
    port = port or free_port()
    argv = [sys.executable, str(TOOLS / "serve_asgi_example.py"),
            str(examples / "http_server.py"), str(port)]  # fmt: skip
    return serving(argv, port)


def ts_server(
    node: str, sdk: Path, port: int | None = None
) -> contextlib.AbstractContextManager[str]:
    port = port or free_port()
    argv = [node, str(sdk / "dist" / "examples" / "http-server.js")]
    return serving(argv, port, {"PORT": str(port)})


def python_client(examples: Path, name: str, url: str) -> tuple[list[str], dict[str, str]]:
    argv = [sys.executable, str(TOOLS / "run_example_client.py"), str(examples / name), url]
    return argv, {}


def ts_client(node: str, sdk: Path, name: str, url: str) -> tuple[list[str], dict[str, str]]:
    variable = "ACP_WS_URL" if name.startswith("ws") else "ACP_HTTP_URL"
    return [node, str(sdk / "dist" / "examples" / name)], {variable: url}


# The TypeScript example client's last line, ``await stream.writable.close()``, throws when the
# connection still holds the stream's writer, a race of its own: against the Python SDK's server
# it does so every time with nothing in between, against its own server now and then (the
# conversation itself is over and complete by then).
TS_TEARDOWN_FAILURE = b"ERR_INVALID_STATE]: Invalid state: WritableStream is locked"


def run_client(
    argv: list[str], extra: dict[str, str], timeout: float = 60, *, teardown_may_fail: bool = False
) -> str:
    done = run_to_end(
        argv, text=False, stdin=subprocess.DEVNULL, env={**env(), **extra}, timeout=timeout
    )
    output = done.stdout.decode("utf-8", "replace")
    if teardown_may_fail and done.returncode == 1 and TS_TEARDOWN_FAILURE in done.stderr:
        return output
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{output}\n{done.stderr!r}"
    return output


class Listener:
    """``acp-proxy record --listen`` as a process; ``url`` once it listens."""

    def __init__(self, db: Path, upstream: str, *options: str) -> None:
        argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db),
                "--listen", "127.0.0.1:0", "--upstream", upstream, *options]  # fmt: skip
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env(),
        )  # fmt: skip
        self.stderr_lines: list[str] = []
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(START_S):
            self.stop()
            pytest.fail(f"the listener said no address: {self.stderr_lines}")
        said = next(line for line in self.stderr_lines if "listening on " in line)
        self.url = said.split("listening on ", 1)[1].strip()
        self.stdout = b""

    def _read(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr_lines.append(line)
            if "listening on " in line:
                self._listening.set()
        self._listening.set()

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[len("http") :]

    def stop(self) -> int:
        """SIGINT, then wait (the recorder commits); the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        # stderr is the reader thread's alone (a second reader would take lines from it).
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(5)
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self.stdout = self.process.stdout.read()
        self.process.stdout.close()
        self.process.stderr.close()
        return self.process.returncode

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def fake_agent(log: Path, *options: str) -> Iterator[str]:
    """tests/support/tools/remote_agent.py serving on a free port (``options``: its own, e.g.
    ``--flood N SIZE``), every request it gets written to ``log``; yields its URL."""
    port = free_port()
    argv = [sys.executable, str(TOOLS / "remote_agent.py"), str(port), "--log", str(log), *options]
    with serving(argv, port) as url:
        yield url
