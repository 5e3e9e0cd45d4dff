"""The readers on recordings of real remote traffic: both SDKs' clients through ``record
--listen`` to the Python SDK's example server, both profiles.

The recording is made by ``acp-proxy record --listen 127.0.0.1:0 --upstream URL`` in front of
``examples/http_server.py`` (hypercorn). It checks that

* ``check`` finds nothing of the transport rules (TRN001-TRN003) in what the official SDKs
  sent and answered: the rules agree with the reference implementations;
* ``ls`` says how each connection was carried;
* an export imports back with the same exchanges and frame streams;
* a bundle holds no credential (the TypeScript clients send ``Authorization: Bearer
  example-token``);
* the OTLP export has one HTTP server span per exchange.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import otlp_receiver
from tests.support.bridge_peers import python_server, run_example
from tests.support.processes import run_to_end, started

from .conftest import run_env

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.peers, pytest.mark.timeout(180)]
PROXY = [sys.executable, "-m", "acp_proxy"]


@contextmanager
def reverse_proxy(db: Path, upstream: str) -> Iterator[str]:
    argv = [*PROXY, "record", "--db", str(db), "--listen", "127.0.0.1:0", "--upstream", upstream]
    quiet = subprocess.DEVNULL
    with started(
        argv, env=run_env({}), stdin=quiet, stdout=quiet, stderr=subprocess.PIPE
    ) as process:
        try:
            assert process.stderr is not None
            said = process.stderr.readline().decode()
            assert "listening on http://127.0.0.1:" in said, said
            yield said.split("listening on ", 1)[1].split()[0]
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


def acp(*args: str) -> subprocess.CompletedProcess[str]:
    return run_to_end([*PROXY, *args], env=run_env({}), timeout=60)


@pytest.fixture(scope="module")
def recorded(
    python_examples: Path, node: str, ts_sdk: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    work = tmp_path_factory.mktemp("remote-readers")
    db = work / "remote.sqlite"
    clients = [
        (run_example(python_examples / "http_client.py"), False),
        (run_example(python_examples / "ws_client.py"), True),
        ([node, str(ts_sdk / "dist" / "examples" / "http-client.js")], False),
        ([node, str(ts_sdk / "dist" / "examples" / "ws-client.js")], True),
    ]
    with python_server(python_examples, work / "server.jsonl") as server, reverse_proxy(
        db, server.url
    ) as url:  # fmt: skip
        for argv, websocket in clients:
            shown = "ws" + url[len("http") :] if websocket else url
            env = run_env({"ACP_URL": shown, "ACP_HTTP_URL": shown, "ACP_WS_URL": shown})
            done = run_to_end(argv, text=False, env=env, cwd=work, timeout=60)
            assert b"end_turn" in done.stdout, done.stderr.decode()
    return db


def connections(db: Path) -> list[tuple[int, str]]:
    con = sqlite3.connect(db)
    try:
        return [(int(i), str(t)) for i, t in con.execute("SELECT id, transport FROM connection")]
    finally:
        con.close()


def test_the_sdks_follow_the_transport_rules(recorded: Path) -> None:
    carried = connections(recorded)
    assert sorted(t for _, t in carried) == ["http", "http", "websocket", "websocket"]
    for connection_id, _ in carried:
        done = acp("check", "--db", str(recorded), "--select", "TRN", "--format", "json",
                   str(connection_id))  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["findings"] == []


def test_ls_says_how_each_connection_was_carried(recorded: Path) -> None:
    shown = acp("ls", "--db", str(recorded), "--no-pager").stdout
    assert shown.count(" http from 127.0.0.1:") == 2
    assert shown.count(" websocket from 127.0.0.1:") == 2


def test_show_says_which_stream_carried_each_frame(recorded: Path) -> None:
    """Every frame of the SDKs' traffic has its stream, the one the recording holds."""
    for connection_id, transport in connections(recorded):
        done = acp("show", "--db", str(recorded), "--format", "json", str(connection_id))
        records = [json.loads(line) for line in done.stdout.splitlines()]
        con = sqlite3.connect(recorded)
        try:
            stored = con.execute(
                "SELECT seq, stream, exchange_seq FROM frame_transport WHERE connection_id = ?"
                " ORDER BY seq", (connection_id,),
            ).fetchall()  # fmt: skip
        finally:
            con.close()
        assert [(r["seq"], r["stream"], r["exchange"]) for r in records] == stored
        streams = {r["stream"] for r in records}
        if transport == "websocket":
            assert streams == {"websocket"}
        else:  # initialize in a POST and answered in its body, the rest on event streams
            assert (
                {"post", "post_answer"}
                <= streams
                <= {"post", "post_answer", "connection_sse", "session_sse"}
            )
        lines = acp("show", "--db", str(recorded), "--no-pager", str(connection_id)).stdout
        tag = "ws#1" if transport == "websocket" else "post#1 200"
        assert lines.splitlines()[0].split(None, 3)[3].startswith(tag)


def test_an_export_imports_back_with_its_transport(recorded: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.sqlite"
    query = ("SELECT seq, method, target, stream, status, request_headers, response_headers "
             "FROM http_exchange WHERE connection_id = ? ORDER BY seq")  # fmt: skip
    for connection_id, _ in connections(recorded):
        exported = tmp_path / f"{connection_id}.jsonl"
        done = acp("export", "--db", str(recorded), "--format", "jsonl", str(connection_id),
                   "-o", str(exported))  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert acp("import", "--db", str(again), str(exported)).returncode == 0
        new = connections(again)[-1][0]
        before, after = sqlite3.connect(recorded), sqlite3.connect(again)
        try:
            assert (
                after.execute(query, (new,)).fetchall()
                == before.execute(query, (connection_id,)).fetchall()
            )
        finally:
            before.close()
            after.close()


def test_a_bundle_holds_no_credential(recorded: Path, tmp_path: Path) -> None:
    ts_http = [c for c, t in connections(recorded) if t == "http"][-1]
    bundle = tmp_path / "report.acpbundle"
    done = acp("bundle", "--db", str(recorded), "-o", str(bundle), str(ts_http))
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(bundle) as archive:
        everything = b"".join(archive.read(name) for name in archive.namelist())
    assert b"example-token" not in everything
    assert b"authorization" in everything  # the header's name is kept, its value is not


def test_the_otlp_export_has_a_server_span_per_exchange(recorded: Path) -> None:
    first = connections(recorded)[0][0]
    con = sqlite3.connect(recorded)
    try:
        exchanges = con.execute(
            "SELECT count(*) FROM http_exchange WHERE connection_id = ?", (first,)
        ).fetchone()[0]
    finally:
        con.close()
    receiver = otlp_receiver.start()
    try:
        done = acp("export", "--db", str(recorded), "--format", "otlp", "--endpoint",
                   receiver.url, str(first))  # fmt: skip
        assert done.returncode == 0, done.stderr
        spans = receiver.wait_for(int(done.stdout.split()[1]))
    finally:
        otlp_receiver.stop(receiver)
    assert len([s for s in spans if s.kind == 2]) == exchanges > 0


RECORDING_TEST = """
import os, subprocess, sys
import pytest

RUN = {run!r}


@pytest.mark.acp_cassette("recorded-remote", agent_url=os.environ["REAL_AGENT_URL"])
def test_remote_client(acp_agent_url):
    env = {{**os.environ, "ACP_URL": acp_agent_url}}
    done = subprocess.run(RUN, env=env, capture_output=True, timeout=30, check=False)
    assert b"stop reason: end_turn" in done.stdout, done.stderr
"""


def test_the_fixture_records_a_cassette_through_the_reverse_proxy_then_replays_it(
    pytester: pytest.Pytester, python_examples: Path, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:  # fmt: skip
    pytester.makepyfile(RECORDING_TEST.format(run=run_example(python_examples / "http_client.py")))
    for name, value in run_env({}).items():
        monkeypatch.setenv(name, value)
    with python_server(python_examples, tmp_path / "server.jsonl") as server:
        monkeypatch.setenv("REAL_AGENT_URL", server.url)
        result = pytester.runpytest_subprocess("--acp-record-mode=once")
        result.assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "recorded-remote.jsonl"
    header = json.loads(cassette.read_bytes().splitlines()[0])
    assert header["connection"]["transport"] == "http"
    assert header["transport"]["exchanges"]
    monkeypatch.setenv("REAL_AGENT_URL", "http://127.0.0.1:9/unused")
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(passed=1)
