"""OpenTelemetry export of real conversations: the demo pair (official ACP Python SDK).

The demo client and agent (acp_proxy/demo) talk through ``acp-proxy record`` (the session's
demo recording, tests/support/demo_recording.py, and live runs in the same user's home); the
spans go to a
real OTLP/HTTP receiver in the test (standard-library HTTP server on 127.0.0.1, decoding with
``opentelemetry-proto``: tests/support/otlp_receiver.py). It checks that

* ``export --format otlp`` sends the expected span tree: names, parents, kinds, attributes,
  the recorded times, the events; again and again the same spans;
* content is absent unless asked for, and redacted when it is;
* the standard ``OTEL_*`` variables choose the endpoint, headers and resource;
* ``record --otlp`` sends spans while the connection is still open, the same spans as a later
  export (with ``--otlp-content``, redacted, both ways); a ``traceparent`` in a prompt's
  ``_meta`` puts that turn under the caller's trace;
* with the collector down or slow, forwarding stays byte-exact, the recording complete, and the
  drops are said once and counted in the connection's row.

One hand-written client drives the demo agent where the demo client cannot (holding the
connection open, sending ``_meta``); everything else is the SDK's.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.store import readers
from tests.support import demo_recording as demo
from tests.support import otlp_receiver
from tests.support.demo_recording import AGENT, ANTHROPIC, GITHUB, USER, DemoRecording
from tests.support.otlp_receiver import ReceivedSpan, Receiver
from tests.support.processes import acp_proxy as run_acp_proxy
from tests.support.processes import run_to_end

from .conftest import Launch, Middle, PeerRun, RunSpec, tap

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]

REMOTE_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
REMOTE_SPAN = "00f067aa0ba902b7"
TREE = [
    (0, "acp connection"),
    (1, "initialize"),
    (1, "acp session"),
    (2, "session/new"),
    (2, "invoke_agent acp-proxy-demo-agent"),
    (3, "session/prompt"),
    (3, "execute_tool read"),
    (4, "session/request_permission"),
    (3, "fs/read_text_file"),
]


@pytest.fixture
def home(demo_recording: DemoRecording) -> tuple[Path, dict[str, str]]:
    """The demo recording's project folder in a user's home, and the environment of that user."""
    return demo_recording.project, dict(demo_recording.env)


def acp_proxy(
    args: list[str], env: dict[str, str], cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = run_acp_proxy(*args, cwd=cwd, env=env)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def demo_client() -> list[str]:
    """The demo client reading notes.txt, straight to the demo agent."""
    return [*demo.client(), *AGENT]


@pytest.fixture
def recording(demo_recording: DemoRecording) -> Path:
    return demo_recording.db


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from otlp_receiver.running()


def export(
    recording: Path, home: tuple[Path, dict[str, str]], receiver: Receiver, *extra: str
) -> list[ReceivedSpan]:
    project, env = home
    before = len(receiver.spans)
    args = ["export", "--db", str(recording), "--format", "otlp", "--endpoint", receiver.url]
    done = acp_proxy([*args, *extra], env, project)
    assert done.stdout.startswith(f"sent {len(TREE)} spans of connection 1 to {receiver.url}/")
    return receiver.wait_for(before + len(TREE))[before:]


def named(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    by_name = {span.name: span for span in spans}
    assert len(by_name) == len(spans)
    return by_name


def everything(spans: list[ReceivedSpan]) -> str:
    """Every attribute and event value of ``spans``, as one searchable text."""
    return json.dumps(
        [[s.name, s.status_message, s.attributes, [e.attributes for e in s.events]] for s in spans],
        default=str,
    )


def frame_times(db: Path) -> dict[tuple[str | None, str], list[int]]:
    """Wall times of the recorded frames, by (method, kind), in order."""
    database = readers.open_for_reading(db)
    times: dict[tuple[str | None, str], list[int]] = {}
    for frame in readers.frames(database, 1):
        times.setdefault((frame.method, frame.kind), []).append(frame.wall_ns)
    database.close()
    return times


def test_export_sends_the_span_tree_with_the_recorded_times(
    recording: Path, home: tuple[Path, dict[str, str]], receiver: Receiver
) -> None:
    spans = export(recording, home, receiver)
    assert otlp_receiver.tree(spans) == TREE
    database = readers.open_for_reading(recording)
    row = readers.connection(database, 1)
    database.close()
    assert {s.trace_id for s in spans} == {row.uid}
    by_name = named(spans)
    connection = by_name["acp connection"]
    assert connection.parent_id == ""
    assert connection.start_ns == row.started_ns
    assert connection.resource["service.name"] == "acp-proxy"
    assert connection.scope == "acp-proxy"
    assert connection.attributes["gen_ai.agent.name"] == "acp-proxy-demo-agent"
    assert connection.attributes["acp.client.name"] == "acp-proxy-demo-client"
    assert connection.attributes["acp.protocol.version"] == 1
    assert connection.attributes["acp.stderr.lines"] == 3

    times = frame_times(recording)
    turn, prompt = by_name["invoke_agent acp-proxy-demo-agent"], by_name["session/prompt"]
    assert (prompt.start_ns, prompt.end_ns) == (
        times[("session/prompt", "request")][0], times[("session/prompt", "response")][0],
    )  # fmt: skip
    assert (turn.start_ns, turn.end_ns) == (prompt.start_ns, prompt.end_ns)
    assert connection.end_ns == max(t for ts in times.values() for t in ts)
    assert turn.kind == prompt.kind == 3  # SPAN_KIND_CLIENT
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == "demo-session-1"
    assert turn.attributes["gen_ai.agent.version"] == "0.1.0"
    assert turn.attributes["acp.stop_reason"] == "end_turn"
    assert prompt.attributes["rpc.method"] == "session/prompt"
    assert prompt.attributes["jsonrpc.request.id"] == "2"
    assert prompt.attributes["acp.caller"] == "client"
    updates = [e.attributes["acp.session_update"] for e in turn.events]
    assert updates[0] == "agent_thought_chunk"
    assert "agent_message_chunk" in updates
    assert updates[-1] == "usage_update"
    assert [e.time_ns for e in turn.events] == sorted(e.time_ns for e in turn.events)
    assert all(prompt.start_ns <= e.time_ns <= prompt.end_ns for e in turn.events)

    tool = by_name["execute_tool read"]
    assert tool.kind == 1  # SPAN_KIND_INTERNAL
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.call.id"] == "read-1"
    assert tool.attributes["acp.tool_call.kind"] == "read"
    assert tool.attributes["acp.tool_call.status"] == "completed"
    assert tool.attributes["acp.tool_call.title"] == "Read notes.txt"
    assert [e.attributes["acp.session_update"] for e in tool.events] == [
        "tool_call", "tool_call_update", "tool_call_update",
    ]  # fmt: skip
    assert tool.end_ns == tool.events[-1].time_ns
    permission = by_name["session/request_permission"]
    assert permission.attributes["acp.caller"] == "agent"
    assert permission.attributes["gen_ai.tool.call.id"] == "read-1"
    assert by_name["fs/read_text_file"].attributes["acp.caller"] == "agent"

    again = export(recording, home, receiver)  # a week later: the same spans
    assert sorted((s.span_id, s.parent_id, s.start_ns, s.end_ns) for s in again) == sorted(
        (s.span_id, s.parent_id, s.start_ns, s.end_ns) for s in spans
    )
    assert everything(sorted(again, key=lambda s: s.span_id)) == everything(
        sorted(spans, key=lambda s: s.span_id)
    )


def test_content_is_absent_unless_asked_for_and_redacted_when_it_is(
    recording: Path, home: tuple[Path, dict[str, str]], receiver: Receiver
) -> None:
    plain = everything(export(recording, home, receiver))
    for text in ("stopped working", "first line of the notes", GITHUB, ANTHROPIC, f"/{USER}/"):
        assert text not in plain, text
    for key in ("gen_ai.input.messages", "gen_ai.output.messages", "acp.response.result"):
        assert key not in plain

    spans = export(recording, home, receiver, "--otlp-content")
    rich = everything(spans)
    assert "stopped working" in rich
    assert "first line of the notes" in rich
    for secret in (GITHUB, ANTHROPIC, f"/{USER}/", f'/{USER}"'):
        assert secret not in rich, secret
    assert "[redacted:github-token:1]" in rich
    by_name = named(spans)
    messages = json.loads(
        by_name["invoke_agent acp-proxy-demo-agent"].attributes["gen_ai.input.messages"]
    )
    assert messages[0]["role"] == "user"
    assert "[redacted:github-token:1] stopped working" in messages[0]["parts"][0]["content"]
    output = json.loads(
        by_name["invoke_agent acp-proxy-demo-agent"].attributes["gen_ai.output.messages"]
    )
    assert output[0]["role"] == "assistant"
    assert output[0]["finish_reason"] == "end_turn"
    assert "notes.txt" in output[0]["parts"][-1]["content"]
    read = json.loads(by_name["fs/read_text_file"].attributes["acp.response.result"])
    assert read["content"].startswith("first line of the notes\n")


def test_the_standard_environment_chooses_endpoint_headers_and_resource(
    recording: Path, home: tuple[Path, dict[str, str]], receiver: Receiver
) -> None:
    project, env = home
    settings = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_EXPORTER_OTLP_HEADERS": "x-team=acp,authorization=Bearer%20t0ken",
        "OTEL_SERVICE_NAME": "ci-editor",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,host.name=runner-7",
    }
    done = acp_proxy(
        ["export", "--db", str(recording), "--format", "otlp"], {**env, **settings}, project
    )
    assert f"to {receiver.url}/v1/traces" in done.stdout
    spans = receiver.wait_for(len(TREE))
    assert spans[0].resource["service.name"] == "ci-editor"
    assert spans[0].resource["deployment.environment"] == "ci"
    assert spans[0].resource["host.name"] == "runner-7"
    assert receiver.headers[-1]["x-team"] == "acp"
    assert receiver.headers[-1]["authorization"] == "Bearer t0ken"

    traces_only = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",  # the traces variable wins
    }
    acp_proxy(
        ["export", "--db", str(recording), "--format", "otlp"], {**env, **traces_only}, project
    )
    receiver.wait_for(2 * len(TREE))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_export_to_a_collector_that_is_down_is_one_line(
    recording: Path, home: tuple[Path, dict[str, str]]
) -> None:
    project, env = home
    url = f"http://127.0.0.1:{free_port()}"
    args = ["export", "--db", str(recording), "--format", "otlp", "--endpoint", url]
    done = acp_proxy(args, {**env, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}, project, check=False)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"acp-proxy: cannot send spans to {url}/v1/traces: ")
    assert "Connection refused" in done.stderr


class RawClient:
    """Drives the demo agent through the proxy with hand-written lines, holding it open."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request; answer the agent's own requests until its response comes."""
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line.endswith(b"\n"), f"the agent's stdout ended: {line!r}"
            message = json.loads(line)
            if message.get("method") == "session/request_permission":
                outcome = {"outcome": "selected", "optionId": "allow-once"}
                self.send({"id": message["id"], "result": {"outcome": outcome}})
            elif message.get("method") == "fs/read_text_file":
                text = Path(message["params"]["path"]).read_text()
                self.send({"id": message["id"], "result": {"content": text}})
            elif "method" not in message and message.get("id") == self.next_id:
                return message["result"]

    def close(self) -> int:
        self.stdout, self.stderr = self.proc.communicate(timeout=60)  # closes stdin first
        return self.proc.returncode


def test_record_otlp_sends_live_spans_and_a_traceparent_adopts_the_turn(
    home: tuple[Path, dict[str, str]], receiver: Receiver, tmp_path: Path
) -> None:
    project, env = home
    db = tmp_path / "live.sqlite"
    proxy = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--otlp", receiver.url]
    client = RawClient([*proxy, "--otlp-content", "--", *AGENT], project, env)
    client.call("initialize", {
        "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}},
        "clientInfo": {"name": "raw-editor", "version": "3"},
    })  # fmt: skip
    session = client.call("session/new", {"cwd": str(project), "mcpServers": []})["sessionId"]
    traceparent = f"00-{REMOTE_TRACE}-{REMOTE_SPAN}-01"
    client.call("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "look at @notes.txt"}],
        "_meta": {"traceparent": traceparent},
    })  # fmt: skip
    live = receiver.wait_for(len(TREE) - 2)  # all but the session and the connection
    assert client.proc.poll() is None, "the spans came only after the connection ended"
    assert "acp connection" not in {span.name for span in live}
    assert client.close() == 0
    spans = receiver.wait_for(len(TREE))
    by_name = named(spans)
    turn = by_name["invoke_agent acp-proxy-demo-agent"]
    assert turn.trace_id == REMOTE_TRACE
    assert turn.parent_id == REMOTE_SPAN
    session_span = by_name["acp session"]
    assert turn.links == [(session_span.trace_id, session_span.span_id)]
    for child in ("session/prompt", "execute_tool read", "fs/read_text_file"):
        assert by_name[child].trace_id == REMOTE_TRACE
        assert by_name[child].parent_id == turn.span_id
    assert by_name["session/request_permission"].trace_id == REMOTE_TRACE
    connection = by_name["acp connection"]
    assert session_span.trace_id == connection.trace_id != REMOTE_TRACE
    assert connection.attributes["acp.client.name"] == "raw-editor"
    # --otlp-content, live: the content is there, through the redactor.
    assert "look at @notes.txt" in turn.attributes["gen_ai.input.messages"]
    assert (
        "first line of the notes" in by_name["fs/read_text_file"].attributes["acp.response.result"]
    )
    new_session = by_name["session/new"].attributes["acp.request.params"]
    assert "/home/[redacted:user:1]/project" in new_session
    assert ANTHROPIC not in everything(spans)
    assert f"/{USER}/" not in everything(spans)

    later = otlp_receiver.start()
    try:
        args = ["export", "--db", str(db), "--format", "otlp", "--endpoint", later.url]
        acp_proxy([*args, "--otlp-content"], env, project)
        exported = later.wait_for(len(TREE))
    finally:
        otlp_receiver.stop(later)
    assert everything(sorted(exported, key=lambda s: s.span_id)) == everything(
        sorted(spans, key=lambda s: s.span_id)
    )
    assert sorted((s.span_id, s.parent_id, s.start_ns, s.end_ns, s.links) for s in exported) == (
        sorted((s.span_id, s.parent_id, s.start_ns, s.end_ns, s.links) for s in spans)
    )
    row = sqlite3.connect(db).execute(
        "SELECT otlp_frames_dropped, otlp_spans_dropped FROM connection"
    )
    assert row.fetchone() == (0, 0)


def drop_counts(db: Path) -> tuple[int, int, int]:
    with contextlib.closing(sqlite3.connect(db)) as database:
        row = database.execute(
            "SELECT otlp_frames_dropped, otlp_spans_dropped, frames_lost FROM connection"
        ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def run_tapped(workdir: Path, cwd: Path, env: dict[str, str], proxy_args: list[str]) -> PeerRun:
    """The demo pair as client -> bytetap -> record PROXY_ARGS -> bytetap -> agent."""
    workdir.mkdir(parents=True)
    db = workdir / "recording.sqlite"
    agent = tap(workdir / "agent-side", AGENT)
    proxy = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), *proxy_args, "--"]
    outer = tap(workdir / "client-side", [*proxy, *agent])
    argv = [*demo.client(), *outer]
    done = run_to_end(argv, text=False, cwd=cwd, env=env, timeout=90)
    spec = RunSpec("tapped", lambda _agent, _scratch: Launch(argv), AGENT, b"", Middle.PROXY, cwd)
    return PeerRun(spec, done.returncode, done.stdout, done.stderr, workdir)


@pytest.mark.parametrize("collector", ["down", "slow"])
def test_record_otlp_with_the_collector_down_or_slow_forwards_and_records_everything(
    collector: str, home: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    project, env = home
    slow = otlp_receiver.start(delay=4.0) if collector == "slow" else None
    url = slow.url if slow else f"http://127.0.0.1:{free_port()}"
    try:
        direct = run_to_end(demo_client(), text=False, cwd=project, env=env, timeout=60)
        began = time.monotonic()
        tapped = run_tapped(tmp_path / "run", project, {**env, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
                            if collector == "down" else env, ["--otlp", url])  # fmt: skip
        took = time.monotonic() - began
    finally:
        if slow is not None:
            otlp_receiver.stop(slow)
    assert tapped.returncode == 0, tapped.stderr.decode()
    assert tapped.stdout == direct.stdout
    outer, inner = tapped.client_side, tapped.agent_side
    assert outer.c2a == inner.c2a, "client->agent bytes differ across the proxy"
    assert outer.a2c == inner.a2c, "agent->client bytes differ across the proxy"
    lines = outer.stderr.splitlines(keepends=True)
    agents = b"".join(line for line in lines if not line.startswith(b"acp-proxy:"))
    assert agents == inner.stderr, "the agent's stderr differs across the proxy"
    recording = tapped.assert_recording_exact()
    assert len(recording.frames) == 24
    said = [line for line in tapped.stderr.decode().splitlines() if line.startswith("acp-proxy:")]
    assert len(said) == 1, said
    assert f"OTLP export to {url}/v1/traces" in said[0]
    assert "the recording is complete" in said[0]
    row = (
        sqlite3.connect(tapped.db)
        .execute("SELECT otlp_frames_dropped, otlp_spans_dropped, frames_lost FROM connection")
        .fetchone()
    )
    assert row[0] == 0
    assert row[1] >= 1
    assert row[2] == 0
    assert took < 30, f"the proxy waited {took:.1f}s on the collector"
    assert os.path.exists(tapped.db)
