"""``search`` and ``stats --by-method`` from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import Frame, LineSplitter
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.cli import run
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import A2C, C2A, line, write_recording
from tests.support.polling import until
from tests.support.processes import acp_proxy

FAKE_AGENT = str(Path(__file__).parents[1] / "support" / "agents" / "fake_agent.py")


@pytest.fixture
def recorded(db_path: Path) -> Path:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    write_recording(db_path, V2_CONVERSATION, label="v2")
    return db_path


def test_finds_a_frame_recorded_a_moment_ago(db_path: Path) -> None:
    # The real record path: a proxy in front of an agent; the recorder process indexes.
    message = b'{"jsonrpc":"2.0","id":1,"method":"x/y","params":{"note":"flux capacitor"}}\n'
    done = acp_proxy(
        "record",
        "--db",
        str(db_path),
        "--",
        sys.executable,
        FAKE_AGENT,
        "echo",
        text=False,
        input=message,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    # The recorder process indexes once the proxy has been told everything is committed.
    db = connect(db_path)
    query = "SELECT indexed_seq FROM search_progress WHERE connection_id = 1"
    until(lambda: db.execute(query).fetchone() == (2,), "the recorder indexing its frames")
    result = run(db_path, "search", "Flux Capacitor")
    assert result.stdout.splitlines() == [
        f"1:{seq}: {way} x/y  " + '{"jsonrpc":"2.0","id":1,"method":"x/y","params":'
        '{"note":"«flux capacitor»"}}'
        for seq, way in ((1, "c2a"), (2, "a2c"))
    ]
    assert "indexing" not in result.stderr  # the recorder had indexed everything


def test_finds_text_in_an_imported_recording(recorded: Path, tmp_path: Path) -> None:
    export = tmp_path / "v1.jsonl"
    run(recorded, "export", "v1", "--format", "jsonl", "-o", str(export))
    other = tmp_path / "other.sqlite"
    run(other, "import", str(export))
    result = run(other, "search", "thinking")
    hit = (
        '1:7: a2c session/update  …Update":"agent_thought_chunk","messageId":"m0","content":'
        '{"type":"text","text":"«thinking»"}}}}'
    )
    assert result.stdout.splitlines() == [hit]
    assert "indexing 16 frames" in result.stderr  # caught up on first use, with its bar
    assert "indexing" not in run(other, "search", "thinking").stderr
    # A bundle or export given as a REF is searched as it is.
    as_file = run(recorded, "search", "thinking", str(export)).stdout
    assert as_file.startswith(f"{export}:1:7: a2c session/update")


def test_exit_statuses_are_greps(
    recorded: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run(recorded, "search", "hello", code=0)
    assert run(recorded, "search", "no such words anywhere", code=1).output == ""
    capfd.readouterr()
    run(recorded, "search", "-E", "(", code=2)
    assert capfd.readouterr().err.startswith("acp-proxy: bad regular expression '(': missing )")
    run(recorded, "search", "-E", r"(a)\1", code=2)
    said = capfd.readouterr().err
    assert said.startswith(r"acp-proxy: bad regular expression '(a)\\1': invalid escape")
    assert "backreferences" in said
    assert said.count("\n") == 1  # one line: RE2's own log stays quiet
    run(recorded, "search", "-E", "(a+)+$", code=1)
    run(recorded, "search", "x", "nope", code=2)
    assert capfd.readouterr().err.startswith("acp-proxy: no recording matches 'nope'")
    run(tmp_path / "none.sqlite", "search", "x", code=2)
    assert "no recording database" in capfd.readouterr().err
    assert "cannot read 'whenever'" in run(recorded, "search", "x", "--since", "whenever",
                                          code=2).output  # fmt: skip


def test_quotes_and_operators_are_literal(db_path: Path) -> None:
    text = 'he said "NOT now" AND left (quietly) *'
    prompt = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": "s", "prompt": [{"type": "text", "text": text}]}}  # fmt: skip
    write_recording(db_path, [*V1_CONVERSATION[:6], (C2A, line(prompt))])
    for pattern in ('"NOT now"', "NOT now AND", "(quietly) *", '"', "AND", "NEAR(said left)"):
        out = run(db_path, "search", pattern, code=1 if pattern.startswith("NEAR") else 0)
        assert out.stdout.count("\n") == (0 if pattern.startswith("NEAR") else 1), pattern


def test_json_limit_and_filters(recorded: Path) -> None:
    records = [
        json.loads(x) for x in run(recorded, "search", "session", "--json").stdout.splitlines()
    ]
    assert len(records) > 4
    first = records[0]
    assert set(first) == {"connection", "seq", "direction", "kind", "method", "time", "snippet",
                          "matches"}  # fmt: skip
    start, end = first["matches"][0]
    assert first["snippet"][start:end].lower() == "session"
    assert len(run(recorded, "search", "session", "-n", "2").stdout.splitlines()) == 2
    only = run(recorded, "search", "session", "v2", "--method", "session/new", "--json").stdout
    assert [(r["connection"], r["seq"]) for r in map(json.loads, only.splitlines())] == [(2, 3)]
    agent_only = run(recorded, "search", "session", "--direction", "agent", "--json").stdout
    assert {json.loads(x)["direction"] for x in agent_only.splitlines()} == {"a2c"}
    run(recorded, "search", "session", "--since", "1h", code=1)  # recorded in 2001


def test_regex_marks_the_match(recorded: Path) -> None:
    out = run(recorded, "search", "-E", r'"code":-\d+').stdout.splitlines()
    assert out == ['1:16: a2c session/set_mode  {"jsonrpc":"2.0","id":"3","error":{«"code":-32602»'
                   ',"message":"Invalid params"}}']  # fmt: skip


def test_recorded_control_characters_never_reach_the_terminal(db_path: Path) -> None:
    evil = "bell\x07 escape\x1b[31m red \u202e reversed"
    message = {"jsonrpc": "2.0", "method": "session/update", "params": {"t": evil}}
    write_recording(db_path, [(A2C, line(message))])
    out = run(db_path, "search", "escape").stdout
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "\u202e" not in out
    assert "\\u001b[31m" in out  # the JSON escape, as the frame's JSON holds it
    assert "\\u202e" in out


def _timed(db_path: Path, latencies_ms: list[int]) -> int:
    """A connection whose requests took exactly these latencies (and one error, one unanswered)."""
    observer = ConnectionObserver()
    records, clock = [], 0
    splitters = {C2A: LineSplitter(), A2C: LineSplitter()}

    def frame(direction: Direction, data: bytes) -> Frame:
        return splitters[direction].feed(data)[0]

    for rpc_id, latency in enumerate(latencies_ms):
        clock += 100_000_000
        request = line({"jsonrpc": "2.0", "id": rpc_id, "method": "fs/read_text_file",
                        "params": {"sessionId": "s", "path": "/x"}})  # fmt: skip
        records.append(observer.observe(A2C, frame(A2C, request), clock, clock))
        answer = {"jsonrpc": "2.0", "id": rpc_id, "result": {"content": "x"}}
        if rpc_id == 0:
            answer = {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -1, "message": "no"}}
        at = clock + latency * 1_000_000
        records.append(observer.observe(C2A, frame(C2A, line(answer)), at, clock))
    clock += 100_000_000
    ping = line({"jsonrpc": "2.0", "id": "p", "method": "_x/ping"})
    records.append(observer.observe(C2A, frame(C2A, ping), clock, clock))
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1))
    writer.append(records)
    return writer.connection_id


def test_stats_by_method_gives_exact_nearest_rank_percentiles(db_path: Path) -> None:
    connection_id = _timed(db_path, list(range(20, 0, -1)))  # 20 ms ... 1 ms
    out = run(db_path, "stats", str(connection_id), "--by-method", "--json").stdout
    records = [json.loads(x) for x in out.splitlines()]
    by_key = {(r["method"], r["direction"]): r for r in records}
    read = by_key[("fs/read_text_file", "a2c")]
    assert (read["count"], read["answered"], read["errors"], read["unanswered"]) == (20, 20, 1, 0)
    # Nearest rank of 1..20 ms: p50 is the 10th value, p95 the 19th, p99 the 20th.
    assert (read["p50_ms"], read["p95_ms"], read["p99_ms"], read["max_ms"]) == (10, 19, 20, 20)
    assert read["p50_ns"] == 10_000_000
    ping = by_key[("_x/ping", "c2a")]
    assert (ping["count"], ping["unanswered"], ping["p50_ms"]) == (1, 1, None)
    table = run(db_path, "stats", str(connection_id), "--by-method").stdout.splitlines()
    assert table[0].split() == ["method", "dir", "calls", "errors", "unanswered", "p50", "ms",
                                "p95", "ms", "p99", "ms", "max", "ms"]  # fmt: skip
    assert table[1].split() == ["_x/ping", "c2a", "1", "0", "1", "-", "-", "-", "-"]
    assert table[2].split() == ["fs/read_text_file", "a2c", "20", "1", "0", "10.000", "19.000",
                                "20.000", "20.000"]  # fmt: skip
