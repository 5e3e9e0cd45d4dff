"""``replay --listen`` serving the official SDKs' remote example clients, both profiles.

Each client first talks to the Python SDK's example server (``examples/http_server.py`` on
hypercorn, every exchange logged by ``tools/asgi_tap.py``); what crossed becomes a recording
(a JSONL of raw frames, imported). Then ``acp-proxy replay --listen 127.0.0.1:0`` serves that
recording and the same client runs against it. It checks that

* the client prints exactly the lines it printed against the real server, and exits 0;
* the replay says, per connection, that nothing diverged, and exits 0 when stopped;
* a client that says something else is a divergence (exit 1) with replay's account;
* with ``--record``, each connection served is recorded as ``record --listen`` records one:
  the client's messages byte for byte as it sent them to the real server, the replay's as
  recorded, each on its stream, and the traffic follows the transport rules (``check``).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.bridge_peers import frames_capture, python_server, run_example
from tests.support.processes import run_to_end, started

from .conftest import run_env

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]
PROXY = [sys.executable, "-m", "acp_proxy"]
CLIENT_TIMEOUT = 30


@contextmanager
def replay_listener(
    db: Path, ref: str, *options: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    argv = [*PROXY, "replay", "--db", str(db), "--listen", "127.0.0.1:0", *options, ref]
    quiet = subprocess.DEVNULL
    with started(
        argv, env=run_env({}), stderr=subprocess.PIPE, stdout=quiet, stdin=quiet
    ) as process:
        try:
            assert process.stderr is not None
            said = process.stderr.readline().decode()
            assert "listening on http://127.0.0.1:" in said, said
            yield said.split("listening on ", 1)[1].strip(), process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def stop(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    assert process.stderr is not None
    rest = process.stderr.read().decode()
    return process.wait(15), rest


def run_client(argv: list[str], url: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = run_env({"ACP_URL": url, "ACP_HTTP_URL": url, "ACP_WS_URL": url})
    return run_to_end(argv, text=False, env=env, cwd=cwd, timeout=CLIENT_TIMEOUT)


def assert_client_done(done: subprocess.CompletedProcess[bytes], more: str = "") -> None:
    """The client ended well. The TypeScript examples close their stream in a ``finally``
    that races with the SDK's own close (``WritableStream is locked``/``closed``, thrown after
    the conversation is over, against their own server too): that exit is accepted when the
    client printed its last line."""
    stderr = done.stderr.decode()
    if done.returncode != 0 and b"Saved session" in done.stdout:
        assert "ERR_INVALID_STATE" in stderr, stderr + more
        return
    assert done.returncode == 0, stderr + more


def record_against_python_server(
    python_examples: Path, tmp_path: Path, argv: list[str], websocket: bool
) -> tuple[Path, bytes]:
    """Run the client against the real server; return the database holding what crossed."""
    log = tmp_path / "server.jsonl"
    with python_server(python_examples, log) as server:
        url = server.ws_url if websocket else server.url
        done = run_client(argv, url, tmp_path)
    assert_client_done(done)
    capture = frames_capture(log, tmp_path / "capture.jsonl")
    db = tmp_path / "recordings.sqlite"
    imported = run_to_end(
        [*PROXY, "import", "--db", str(db), str(capture)], text=False, env=run_env({})
    )
    assert imported.returncode == 0, imported.stderr.decode()
    return db, done.stdout


def python_client(examples: Path, name: str) -> list[str]:
    return run_example(examples / name)


def ts_client(node: str, sdk: Path, name: str) -> list[str]:
    return [node, str(sdk / "dist" / "examples" / name)]


CLIENTS = [
    pytest.param("python", "http_client.py", False, id="python-http"),
    pytest.param("python", "ws_client.py", True, id="python-ws"),
    pytest.param("ts", "http-client.js", False, id="ts-http"),
    pytest.param("ts", "ws-client.js", True, id="ts-ws"),
]


@pytest.mark.parametrize(("sdk", "name", "websocket"), CLIENTS)
def test_replay_listen_serves_the_sdk_clients(
    request: pytest.FixtureRequest, python_examples: Path, tmp_path: Path, sdk: str, name: str,
    websocket: bool,
) -> None:  # fmt: skip
    if sdk == "python":
        argv = python_client(python_examples, name)
    else:
        argv = ts_client(request.getfixturevalue("node"), request.getfixturevalue("ts_sdk"), name)
    db, expected = record_against_python_server(python_examples, tmp_path, argv, websocket)
    assert expected, "the client printed nothing against the real server"
    with replay_listener(db, "1", "--record") as (url, listener):
        shown = url.replace("http://", "ws://") if websocket else url
        done = run_client(argv, shown, tmp_path)
        status, said = stop(listener)
    assert_client_done(done, said)
    # The same lines: their order across two event streams (an update on the session's, the
    # answer on the connection's) is the client's scheduling, not the replay's.
    assert sorted(done.stdout.splitlines()) == sorted(expected.splitlines())
    profile = "WebSocket" if websocket else "Streamable HTTP"
    assert f"remote connection 1 ({profile})" in said
    assert said.count("No divergence.") == 1, said
    assert status == 0, said
    assert_recorded_as_served(db, websocket)


def frames_of(db: Path, connection_id: int) -> list[tuple[str, bytes, str | None]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT f.direction, f.raw, t.stream FROM frame f LEFT JOIN frame_transport t "
            "ON t.connection_id = f.connection_id AND t.seq = f.seq "
            "WHERE f.connection_id = ? ORDER BY f.seq", (connection_id,),
        ).fetchall()  # fmt: skip
    finally:
        con.close()
    return [(str(d), bytes(raw), stream) for d, raw, stream in rows]


def assert_recorded_as_served(db: Path, websocket: bool) -> None:
    """Connection 2 is what replay --listen --record served (connection 1 the real server's
    traffic): the same messages both ways, each on the stream the RFD gives it."""
    con = sqlite3.connect(db)
    try:
        row = con.execute(
            "SELECT transport, status, exit_code, argv, error FROM connection WHERE id = 2"
        ).fetchone()
        assert con.execute("SELECT count(*) FROM connection").fetchone()[0] == 2
        deleted = con.execute(
            "SELECT count(*) FROM http_exchange WHERE connection_id = 2 AND method = 'DELETE'"
        ).fetchone()[0]
    finally:
        con.close()
    # The status says whether the client said goodbye. The TypeScript SDK's client takes the
    # end of the connection's stream (the replay is over) as an error and sends its DELETE
    # without waiting for it, so its process may be gone before the DELETE is sent.
    left = websocket or deleted == 1
    expected = (
        ("closed", None) if left else ("dropped", "the listener stopped with the connection open")
    )
    assert row[:3] == ("websocket" if websocket else "http", expected[0], 0), row
    assert row[4] == expected[1], row
    assert json.loads(row[3])[1:3] == ["replay", "--db"]
    served, original = frames_of(db, 2), frames_of(db, 1)
    for direction in ("c2a", "a2c"):  # the capture's frames are lines: one line break more
        assert sorted(raw for d, raw, _ in served if d == direction) == sorted(
            raw.removesuffix(b"\n") for d, raw, _ in original if d == direction
        ), direction
    # The replay's summary paragraph is the served connection's one stderr line, on no stream.
    summaries = [raw for d, raw, stream in served if d == "stderr" and stream is None]
    assert len(summaries) == 1, served
    assert b"No divergence." in summaries[0], summaries
    streams = {(d, stream) for d, _, stream in served if d != "stderr"}
    if websocket:
        assert streams == {("c2a", "websocket"), ("a2c", "websocket")}
    else:
        assert {("c2a", "post"), ("a2c", "post_answer")} <= streams
        assert streams <= {("c2a", "post"), ("a2c", "post_answer"), ("a2c", "connection_sse"),
                           ("a2c", "session_sse")}  # fmt: skip
    checked = run_to_end(
        [*PROXY, "check", "--db", str(db), "--select", "TRN", "--format", "json", "2"],
        env=run_env({}),
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["findings"] == []


def test_a_client_that_says_something_else_diverges(python_examples: Path, tmp_path: Path) -> None:
    argv = python_client(python_examples, "http_client.py")
    db, _ = record_against_python_server(python_examples, tmp_path, argv, websocket=False)
    changed = tmp_path / "changed_client.py"
    source = (python_examples / "http_client.py").read_text()
    changed.write_text(source.replace("hello over http", "something else"))
    with replay_listener(db, "1") as (url, listener):
        done = run_client(run_example(changed), url, tmp_path)
        status, said = stop(listener)
    assert done.returncode != 0
    assert "no recorded request matches this session/prompt" in said, said
    assert "Diverged" in said
    assert status == 1


REMOTE_CLIENT_TEST = """
import os, subprocess, sys
import pytest

RUN = {run!r}


@pytest.mark.acp_cassette("remote")
def test_remote_client(acp_agent_url):
    env = {{**os.environ, "ACP_URL": acp_agent_url}}
    done = subprocess.run([*RUN, os.environ["CLIENT_SCRIPT"]], env=env, capture_output=True,
                          timeout=30, check=False)
    assert b"stop reason: end_turn" in done.stdout, done.stderr
"""


def test_the_pytest_fixture_gives_the_url_of_a_replayed_cassette(
    pytester: pytest.Pytester, python_examples: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    client = python_examples / "http_client.py"
    db, _ = record_against_python_server(python_examples, tmp_path, run_example(client), False)
    cassettes = pytester.path / "cassettes"
    cassettes.mkdir()
    exported = run_to_end(
        [*PROXY, "export", "--db", str(db), "--format", "jsonl", "1"],
        text=False,
        env=run_env({}),
        check=True,
    )
    (cassettes / "remote.jsonl").write_bytes(exported.stdout)
    pytester.makepyfile(REMOTE_CLIENT_TEST.format(run=run_example(Path("x"))[:-1]))
    for name, value in run_env({}).items():
        monkeypatch.setenv(name, value)

    monkeypatch.setenv("CLIENT_SCRIPT", str(client))
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(passed=1)

    changed = tmp_path / "changed_client.py"
    changed.write_text(client.read_text().replace("hello over http", "something else"))
    monkeypatch.setenv("CLIENT_SCRIPT", str(changed))
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the client diverged from*remote.jsonl*", "*Diverged*"])
