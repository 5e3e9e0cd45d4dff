"""The live exporter (acp_proxy/otel/live.py) as the recorder drives it, against a real receiver.

The whole ``record --otlp`` path with real peers is in tests/integration/test_otel_peers.py;
these are the edge cases a short conversation cannot force: a queue that overflows, a
collector slower than the close deadline.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.otel.export import OtlpSender, builder_options
from acp_proxy.otel.live import LiveExport
from acp_proxy.otel.span_values import ConnectionInfo
from tests.support import otlp_receiver
from tests.support.helpers import A2C, C2A, line, observe_all
from tests.support.polling import until
from tests.support.processes import run_to_end

UID = "00112233445566778899aabbccddeeff"


@pytest.fixture
def receiver() -> Iterator[otlp_receiver.Receiver]:
    yield from otlp_receiver.running()


@pytest.fixture
def slow_receiver() -> Iterator[otlp_receiver.Receiver]:
    yield from otlp_receiver.running(delay=1.5)


def conversation(requests: int) -> list[Any]:
    exchange = []
    for n in range(requests):
        exchange.append((C2A, line({"jsonrpc": "2.0", "id": n, "method": "ping", "params": {}})))
        exchange.append((A2C, line({"jsonrpc": "2.0", "id": n, "result": {}})))
    return observe_all(exchange)[1]


class Row:
    """Stands in for ``Recorder.set_connection``: the columns the sink asks to set."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}

    def __call__(self, **fields: Any) -> None:
        self.fields.update(fields)


def exporter(url: str, said: list[str], row: Row, **limits: Any) -> LiveExport:
    info = ConnectionInfo(UID, 10**18)
    return LiveExport(info, builder_options(False), OtlpSender(url), said.append, row, **limits)


def test_spans_go_out_while_the_recording_goes_on(receiver: otlp_receiver.Receiver) -> None:
    said: list[str] = []
    row = Row()
    live = exporter(receiver.url, said, row)
    records = conversation(3)
    live.committed(1, records[:2])
    first = receiver.wait_for(1)  # before close: sent live
    assert [span.name for span in first] == ["ping"]
    live.committed(1, records[2:])
    live.close()
    names = sorted(span.name for span in receiver.wait_for(4))
    assert names == ["acp connection", "ping", "ping", "ping"]
    assert said == []
    assert row.fields == {}
    assert live.spans_sent == 4


def test_a_full_queue_drops_whole_batches_without_waiting_and_says_so_once(
    slow_receiver: otlp_receiver.Receiver,
) -> None:
    said: list[str] = []
    row = Row()
    live = exporter(slow_receiver.url, said, row, max_frames=6, close_seconds=10.0)
    records = conversation(200)
    slowest = 0.0
    for start in range(0, len(records), 2):
        began = time.perf_counter()
        live.committed(1, records[start : start + 2])
        slowest = max(slowest, time.perf_counter() - began)
        if start == 0:  # the exporter has taken the first batch and sits in its slow send
            until(lambda: slow_receiver.headers, "the exporter's first send")
    live.close()
    assert slowest < 0.05, f"committed() waited {slowest:.3f}s"
    assert live.frames_dropped > 0
    assert row.fields["otlp_frames_dropped"] == live.frames_dropped
    assert len([m for m in said if "falling behind" in m]) == 1
    received = slow_receiver.wait_for(1)
    assert len(received) == live.spans_sent
    assert live.frames_dropped + 2 * live.spans_sent - 2 <= len(records)


def test_a_collector_slower_than_the_close_deadline_costs_spans_not_time() -> None:
    receiver = otlp_receiver.start(delay=5.0)
    try:
        said: list[str] = []
        row = Row()
        live = exporter(receiver.url, said, row, close_seconds=0.5)
        live.committed(1, conversation(2))
        began = time.monotonic()
        live.close()
        assert time.monotonic() - began < 3.0
        assert row.fields["otlp_spans_dropped"] >= 1
        assert live.spans_sent == 0
        assert any("did not finish in time" in m for m in said)
    finally:
        otlp_receiver.stop(receiver)


def test_a_collector_that_is_down_is_said_once_and_counted(unused_port: int) -> None:
    said: list[str] = []
    row = Row()
    live = exporter(f"http://127.0.0.1:{unused_port}", said, row, rest_seconds=60.0)
    records = conversation(3)
    for record in records:
        live.committed(1, [record])
    live.close()
    assert row.fields.get("otlp_spans_dropped", 0) == 4  # three pings and the connection
    assert len(said) == 1
    assert "Connection refused" in said[0]
    assert said[0].startswith(f"OTLP export to http://127.0.0.1:{unused_port}/v1/traces failed")


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _blocked(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run acp-proxy's entry point with the OpenTelemetry packages made unimportable."""
    program = f"import sys; sys.modules['opentelemetry'] = None; {code}"
    return run_to_end([sys.executable, "-c", program], timeout=30, cwd=tmp_path)


@pytest.mark.parametrize(
    "args",
    [
        ["record", "--db", "r.sqlite", "--otlp", "--", sys.executable, "-c", "pass"],
        ["export", "--db", "r.sqlite", "--format", "otlp"],
    ],
)
def test_without_the_extra_it_is_one_line_and_status_2(args: list[str], tmp_path: Path) -> None:
    done = _blocked(f"from acp_proxy.cli.entry import main; main({args!r})", tmp_path)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr
        == "acp-proxy: OTLP export needs the otel extra: pip install 'acp-proxy[otel]'\n"
    )
    assert not (tmp_path / "r.sqlite").exists()


def test_the_early_launch_reads_the_otlp_options_as_the_command_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from acp_proxy.cli.entry import early_record_settings
    from acp_proxy.cli.main import main
    from acp_proxy.record import session as record_module

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    for options in (
        ["--otlp"],
        ["--otlp", "http://collector:4318"],
        ["--otlp=http://c:4318", "--otlp-content"],
        ["--otlp", "--check", "--otlp-content"],
    ):
        seen: list[record_module.RecordOptions] = []
        monkeypatch.setattr(
            record_module, "record", lambda options, report, seen=seen: seen.append(options) or 0
        )
        args = ["record", *options, "--", "agent"]
        with pytest.raises(SystemExit):
            main(args=args)
        early = early_record_settings(args)
        assert early is not None, options
        (through_click,) = seen
        assert (early.otlp, early.otlp_content, early.check) == (
            through_click.otlp, through_click.otlp_content, through_click.check,
        )  # fmt: skip
    assert early_record_settings(["record", "--otlp-content", "--", "agent"]) is None


def test_an_exchange_span_goes_out_when_it_ends_and_one_left_open_at_close(
    receiver: otlp_receiver.Receiver,
) -> None:
    said: list[str] = []
    live = LiveExport(ConnectionInfo(UID, 10**18, transport="http"), builder_options(False),
                      OtlpSender(receiver.url), said.append, Row())  # fmt: skip
    post = {"seq": 1, "method": "POST", "target": "/acp?token=x", "http_version": "1.1",
            "stream": "post", "started_ns": 10**18}  # fmt: skip
    stream = {"seq": 2, "method": "GET", "target": "/acp", "stream": "session_sse",
              "acp_session_id": "s1", "started_ns": 10**18 + 1}  # fmt: skip
    live.exchanged([post, stream], [(1, {"status": 202, "answered_ns": 10**18 + 5})])
    live.exchanged([], [(2, {"status": 200, "answered_ns": 10**18 + 6}),
                        (1, {"ended_ns": 10**18 + 7})])  # fmt: skip
    [ended] = receiver.wait_for(1)  # before close: the POST ended, the stream did not
    assert (ended.name, ended.end_ns - ended.start_ns) == ("POST /acp", 7)
    assert ended.attributes["http.response.status_code"] == 202
    live.exchanged([], [(1, {"body": "late"})])  # after its span: nothing more to send
    live.close()
    spans = receiver.wait_for(3)
    left_open = next(s for s in spans if s.name == "GET /acp")
    assert left_open.end_ns - left_open.start_ns == 5  # to its answer, as export sends it
    assert left_open.attributes["acp.session.id"] == "s1"
    connection = next(s for s in spans if s.name == "acp connection")
    assert connection.attributes["acp.transport"] == "http"
    assert {left_open.parent_id, ended.parent_id} == {connection.span_id}
    assert len(spans) == 3
    assert said == []
