"""``record --connect``: the Python SDK's stdio example client bridged to both SDKs' servers.

``examples/client.py`` spawns its agent command, here ``bytetap -> acp-proxy record --connect
URL``: the proxy is a stdio agent to the client and a remote client to the server, the Python
SDK's ``examples/http_server.py`` (hypercorn, every exchange logged by ``tools/asgi_tap.py``) or
the TypeScript SDK's ``dist/examples/http-server.js`` (which refuses requests without its
bearer token), over Streamable HTTP and over WebSocket. It checks that

* the client sees the server's answers (its printed lines);
* the recording holds exactly the bytes on the stdio side, both directions (the tap);
* the server received exactly the client's messages, byte for byte and in order, and sent
  exactly the messages the client was given (the server's log);
* the header named on the command line reached the server from the environment, and neither
  its value nor anything of it is in the recording;
* a server that cannot be reached answers the client's initialize with an error, said once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bridge_peers import conversation, python_server, ts_server
from tests.support.processes import run_to_end

from .conftest import A2C, C2A, RUN_TIMEOUT_S, Recording, TapLog, python_sdk_client, run_env, tap

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]
PROMPTS = ["hello there", "naïve café ✓"]
STDIN = "".join(f"{prompt}\n" for prompt in PROMPTS).encode()
TOKEN = "example-token"  # what the TypeScript example server accepts
PROFILES = [pytest.param(False, id="http"), pytest.param(True, id="ws")]


def bridge(db: Path, url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--connect", url, *extra]


def run_client(
    examples: Path, agent: list[str], workdir: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    launch = python_sdk_client(examples)(agent, workdir)
    return run_to_end(
        launch.argv,
        text=False,
        input=STDIN,
        env=run_env({**launch.env, **(env or {})}),
        cwd=workdir,
        timeout=RUN_TIMEOUT_S,
    )


def lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line]


def assert_recorded_exactly(db: Path, side: TapLog) -> Recording:
    recording = Recording.read(db)
    assert recording.stream(C2A) == side.c2a, "recorded client->agent bytes differ"
    assert recording.stream(A2C) == side.a2c, "recorded agent->client bytes differ"
    return recording


@pytest.mark.parametrize("websocket", PROFILES)
def test_bridge_to_the_python_server(
    python_examples: Path, tmp_path: Path, websocket: bool
) -> None:
    log, db = tmp_path / "server.jsonl", tmp_path / "recording.sqlite"
    with python_server(python_examples, log) as server:
        url = server.ws_url if websocket else server.url
        agent = tap(tmp_path / "client-side", bridge(db, url))
        done = run_client(python_examples, agent, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    shown = done.stdout.decode()
    for prompt in PROMPTS:
        assert f"| Agent: echo: {prompt}\n" in shown
    side = TapLog.read(tmp_path / "client-side")
    recording = assert_recorded_exactly(db, side)
    calls = [(c.caller, c.method) for c in recording.rpc_calls()]
    assert calls == [(C2A, "initialize"), (C2A, "session/new")] + [(C2A, "session/prompt")] * 2

    crossed = conversation(log)
    sent = [raw for direction, raw in crossed if direction == C2A]
    received = [raw for direction, raw in crossed if direction == A2C]
    assert sent == lines(side.c2a), "the server did not receive the client's bytes"
    if websocket:
        assert received == lines(side.a2c), "the client was not given the server's bytes"
    else:  # several event streams: the order across them is the network's
        assert sorted(received) == sorted(lines(side.a2c))
    assert recording.connection["argv"] == f'["{url}"]'
    assert recording.connection["remote_url"] == url
    assert recording.connection["transport"] == "stdio"


@pytest.mark.parametrize("websocket", PROFILES)
def test_bridge_to_the_typescript_server_with_a_token_from_the_environment(
    python_examples: Path, node: str, ts_sdk: Path, tmp_path: Path, websocket: bool
) -> None:
    db = tmp_path / "recording.sqlite"
    header = ["--header", "Authorization: Bearer $ACP_TEST_TOKEN"]
    with ts_server(node, ts_sdk) as server:
        url = server.ws_url if websocket else server.url
        agent = tap(tmp_path / "client-side", bridge(db, url, *header))
        done = run_client(python_examples, agent, tmp_path, {"ACP_TEST_TOKEN": TOKEN})
        refused = run_client(python_examples, bridge(tmp_path / "refused.sqlite", url, *header),
                             tmp_path, {"ACP_TEST_TOKEN": "wrong"})  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert b"| Agent: Hello from the ACP HTTP/WebSocket example server" in done.stdout
    assert_recorded_exactly(db, TapLog.read(tmp_path / "client-side"))
    for stored in (db, tmp_path / "refused.sqlite"):
        content = stored.read_bytes()
        assert TOKEN.encode() not in content
        assert b"wrong" not in content
        assert b"Bearer" not in content
    assert refused.returncode != 0
    assert b"acp-proxy: " in refused.stderr


def test_bridge_to_nothing_answers_initialize_with_an_error(
    python_examples: Path, tmp_path: Path
) -> None:
    from tests.support.bridge_peers import free_port

    db = tmp_path / "recording.sqlite"
    url = f"http://127.0.0.1:{free_port()}/acp"
    agent = tap(tmp_path / "client-side", bridge(db, url))
    done = run_client(python_examples, agent, tmp_path)
    stderr = done.stderr.decode()
    assert "acp-proxy: the remote agent cannot be reached" in stderr
    assert stderr.count("cannot be reached") == 2, stderr  # ours once, the client's error once
    side = TapLog.read(tmp_path / "client-side")
    assert side.status == 1
    recording = assert_recorded_exactly(db, side)
    answer = recording.messages(A2C)[0]
    assert answer["id"] == 0
    assert "cannot be reached" in answer["error"]["message"]
    assert recording.connection["exit_code"] == 1
