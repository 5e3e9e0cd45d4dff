"""A remote connection's OTLP export: one HTTP server span per request, under the connection.

The recording is written straight into a database (tests/support/remote_recordings.py); the
spans are sent by ``acp-proxy export --format otlp`` to the tests' own OTLP receiver
(opentelemetry-proto, on loopback).
"""

from __future__ import annotations

from pathlib import Path

from tests.support import otlp_receiver
from tests.support.cli import run
from tests.support.remote_recordings import exchange, http_exchanges, http_frames, write_remote

SERVER_KIND = 2  # OTLP's SPAN_KIND_SERVER
ERROR_CODE = 2


def test_each_request_is_a_server_span_of_the_connection(tmp_path: Path) -> None:
    db = tmp_path / "remote.sqlite"
    rows = http_exchanges()
    rows[0] = {**rows[0], "target": "/acp?token=secret", "answered_ns": 10**18 + 5_000_000}
    rows.append(exchange(6, "DELETE", "delete", 503, error="upstream gone",
                         ended_ns=10**18 + 9_000_000))  # fmt: skip
    write_remote(db, "http", rows, http_frames(), label="remote")
    receiver = otlp_receiver.start()
    try:
        said = run(db, "export", "--format", "otlp", "--endpoint", receiver.url, "remote").output
        spans = receiver.wait_for(int(said.split()[1]))
    finally:
        otlp_receiver.stop(receiver)
    connection = next(s for s in spans if s.name == "acp connection")
    assert connection.attributes["network.transport"] == "tcp"
    assert connection.attributes["acp.transport"] == "http"
    http = sorted((s for s in spans if s.kind == SERVER_KIND), key=lambda s: s.start_ns)
    assert [s.name for s in http] == ["POST /acp", "GET /acp", "POST /acp", "GET /acp",
                                      "POST /acp", "DELETE /acp"]  # fmt: skip
    assert {s.parent_id for s in http} == {connection.span_id}
    assert {s.trace_id for s in http} == {connection.trace_id}
    first, last = http[0], http[-1]
    assert first.attributes == {
        "http.request.method": "POST", "url.path": "/acp", "http.response.status_code": 200,
        "network.protocol.version": "1.1", "acp.transport.stream": "post",
    }  # fmt: skip
    assert first.end_ns - first.start_ns == 5_000_000
    assert http[3].attributes["acp.session.id"] == "sess_1"
    assert (last.status_code, last.status_message) == (ERROR_CODE, "upstream gone")
    assert "secret" not in str([s.attributes for s in spans])


def test_a_stdio_recording_has_no_http_spans(tmp_path: Path) -> None:
    from tests.support.fixtures_checks import v1
    from tests.support.helpers import write_recording

    db = tmp_path / "stdio.sqlite"
    write_recording(db, v1())
    receiver = otlp_receiver.start()
    try:
        said = run(db, "export", "--format", "otlp", "--endpoint", receiver.url, "1").output
        spans = receiver.wait_for(int(said.split()[1]))
    finally:
        otlp_receiver.stop(receiver)
    assert not [s for s in spans if s.kind == SERVER_KIND]
    assert (
        next(s for s in spans if s.name == "acp connection").attributes["network.transport"]
        == "pipe"
    )
