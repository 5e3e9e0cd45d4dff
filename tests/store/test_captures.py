"""Importing captures made by other tools (store/captures.py, store/importer.py).

The fixtures in tests/support/captures/ are built the way each tool writes its file (see the
README there); all four hold the same conversation. Each must import with columns derived by the
recorder's observer, and then work with show, check, export, replay and diff.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import FRAME_COLUMNS
from acp_proxy.store import captures
from acp_proxy.store.importer import ImportRefused, import_jsonl
from tests.support.helpers import observe_all
from tests.support.processes import run_to_end

CAPTURES = Path(__file__).resolve().parents[1] / "support" / "captures"
FILES = {
    "frames": CAPTURES / "raw-frames.jsonl",
    "sacp-trace": CAPTURES / "sacp-conductor-trace.jsons",
    "zed-log": CAPTURES / "zed-acp-log.json",
    "acp-devtools": CAPTURES / "acp-devtools-export.json",
}
REPO = Path(__file__).resolve().parents[2]
PROTOCOL = ("c2a", "a2c")


def _import(db: Path, path: Path) -> int:
    with path.open("rb") as handle:
        [connection_id] = import_jsonl(db, handle, label=path.stem)
    return connection_id


def _rows(db: Path, connection_id: int) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = con.execute(
        "SELECT * FROM frame WHERE connection_id = ? ORDER BY seq", (connection_id,)
    ).fetchall()
    con.close()
    return [dict(r) for r in rows]


def _connection(db: Path, connection_id: int) -> dict[str, Any]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    row = dict(con.execute("SELECT * FROM connection WHERE id = ?", (connection_id,)).fetchone())
    con.close()
    return row


def _messages(rows: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(r["direction"], json.loads(r["raw"])) for r in rows if r["direction"] in PROTOCOL]


@pytest.mark.parametrize("fmt", FILES)
def test_each_capture_imports_with_the_columns_the_recorder_would_derive(
    fmt: str, tmp_path: Path
) -> None:
    db = tmp_path / "c.sqlite"
    connection_id = _import(db, FILES[fmt])
    rows = _rows(db, connection_id)
    exchange = [(Direction(r["direction"]), bytes(r["raw"])) for r in rows]
    _, expected = observe_all(exchange)
    derived = [c for c in FRAME_COLUMNS if c not in ("seq", "mono_ns", "wall_ns", "offset")]
    for row, record in zip(rows, expected, strict=True):
        assert {c: row[c] for c in derived} == {c: getattr(record, c) for c in derived}
    connection = _connection(db, connection_id)
    assert connection["status"] == "imported"
    assert connection["protocol_version"] == 1
    assert json.loads(connection["agent_info"])["name"] == "claude-code-acp"
    assert json.loads(connection["client_info"])["name"] == "zed"
    assert connection["frames_c2a"] == sum(r["direction"] == "c2a" for r in rows) == 6
    assert connection["frames_a2c"] == 10
    assert connection["bytes_a2c"] == sum(r["size"] for r in rows if r["direction"] == "a2c")


def test_all_four_hold_the_same_messages(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    messages = {fmt: _messages(_rows(db, _import(db, path))) for fmt, path in FILES.items()}
    first = messages.pop("frames")
    for fmt, got in messages.items():
        assert got == first, fmt


def test_a_kind_or_method_written_in_the_file_is_never_trusted(tmp_path: Path) -> None:
    document = json.loads(FILES["acp-devtools"].read_text())
    assert document["messages"][5]["kind"] == "request"  # the fixture lies here on purpose
    db = tmp_path / "c.sqlite"
    row = _rows(db, _import(db, FILES["acp-devtools"]))[5]
    assert (row["kind"], row["method"], row["update_kind"]) == (
        "notification", "session/update", "agent_message_chunk",
    )  # fmt: skip


def test_devtools_times_label_and_command_come_from_the_export(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    connection_id = _import(db, FILES["acp-devtools"])
    connection = _connection(db, connection_id)
    document = json.loads(FILES["acp-devtools"].read_text())
    assert connection["label"] == "readme question"
    assert json.loads(connection["argv"]) == ["npx", "@zed-industries/claude-code-acp"]
    assert connection["started_ns"] == document["session"]["startedAt"] * 10**6
    assert connection["ended_ns"] == document["session"]["endedAt"] * 10**6
    assert connection["proxy_version"] == "acp-devtools 0.9.0"
    rows = _rows(db, connection_id)
    assert [r["wall_ns"] for r in rows] == [m["timestamp"] * 10**6 for m in document["messages"]]
    assert rows[1]["mono_ns"] - rows[0]["mono_ns"] == 212 * 10**6


def test_the_sacp_trace_keeps_the_clients_side_of_the_conductor(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    rows = _rows(db, _import(db, FILES["sacp-trace"]))
    assert len(rows) == 16  # not the proxy-to-agent hop, not the log events
    assert all(b"conductor" not in bytes(r["raw"]) for r in rows)
    # ts: seconds since the trace started; the response reached the client after its agent hop
    assert rows[1]["mono_ns"] - rows[0]["mono_ns"] == 212_400_000
    error = rows[-1]
    assert (error["kind"], error["error_code"], error["method"]) == (
        "error", -32601, "session/set_mode",
    )  # fmt: skip


def test_zed_error_responses_are_errors_and_results_stay_results(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    rows = _rows(db, _import(db, FILES["zed-log"]))
    kinds = [(r["kind"], r["error_code"]) for r in rows if r["kind"] in ("response", "error")]
    assert kinds.count(("error", -32601)) == 1
    assert sum(k == "response" for k, _ in kinds) == 5
    assert all(r["request_seq"] is not None for r in rows if r["kind"] in ("response", "error"))


def test_raw_frames_keep_exact_bytes_and_may_end_without_a_newline(tmp_path: Path) -> None:
    path = tmp_path / "frames.jsonl"
    entries = [
        {"direction": "c2a", "raw": '{"jsonrpc":"2.0","id":0,"method":"initialize"}'},
        {"direction": "a2c", "raw_base64": "/v8K"},  # invalid UTF-8 (0xfe 0xff) and a newline
        {"direction": "a2c", "raw": "not json\r\n", "wall_ns": 1_700_000_000_000_000_000},
        {"direction": "a2c", "raw": "one\ntwo\n"},  # two lines: two frames, as the wire cuts
        {"direction": "a2c", "raw": "tail", "no_newline": True},
    ]
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    db = tmp_path / "c.sqlite"
    rows = _rows(db, _import(db, path))
    assert [bytes(r["raw"]) for r in rows] == [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize"}\n', b"\xfe\xff\n", b"not json\r\n",
        b"one\n", b"two\n", b"tail",
    ]  # fmt: skip
    assert [r["bad_utf8"] for r in rows][1] == 1
    assert [r["no_newline"] for r in rows] == [0, 0, 0, 0, 0, 1]
    assert rows[2]["wall_ns"] == 1_700_000_000_000_000_000
    assert [r["offset"] for r in rows if r["direction"] == "a2c"] == [0, 3, 13, 17, 21]
    assert _connection(db, rows[0]["connection_id"])["label"] == "frames"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"direction":"c2a","raw":"x","mono_ns":"soon"}\n', "line 1: mono_ns must be a whole"),
        (b'{"direction":"c2a","raw":"x"}\n{"direction":"up","raw":"x"}\n', "line 2: \"direction\""),
        (b'{"direction":"c2a","raw":"x","mono_ns":99999999999999999999}\n', "mono_ns must be"),
        (b'{"direction":"c2a","raw_base64":"%%%"}\n', '"raw_base64" is not base64'),
        (b'{"direction":"c2a","raw":7}\n', 'needs "raw" (text) or "raw_base64"'),
        (b'{"type":"request","ts":"x","from":"client","to":"agent","method":"m","id":1}\n',
         "ts must be a number"),
        (b'{"type":"response","ts":1,"from":"agent","to":"client","id":1,"payload":{}}\n',
         "is_error must be true or false"),
        (b'[{"_direction":"sideways","_type":"request"}]', '"_direction" must be incoming'),
        (b'{"version":2,"session":{},"messages":[]}', "version 2 is not 1"),
        (b'{"version":1,"session":{},"messages":[{"direction":"x","raw":"{}"}]}',
         "messages[0]: direction must be"),
        (b"[1, 2", "it is not JSON"),
        (b'{"hello": "world"}', "its JSON is none of them"),
        (b"\n\n", "the file is empty"),
    ],
)  # fmt: skip
def test_a_bad_capture_is_refused_with_where_and_why(
    content: bytes, says: str, tmp_path: Path
) -> None:
    db = tmp_path / "c.sqlite"
    with pytest.raises(ImportRefused, match=None) as refused:
        import_jsonl(db, iter(content.splitlines(keepends=True)))
    assert says in str(refused.value)
    if db.exists():  # nothing half-imported
        con = sqlite3.connect(db)
        assert con.execute("SELECT count(*) FROM connection").fetchone() == (0,)
        con.close()


def test_the_same_capture_twice_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    _import(db, FILES["zed-log"])
    with pytest.raises(ImportRefused, match="already in this database"):
        _import(db, FILES["zed-log"])


def _cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return run_to_end(
        [sys.executable, "-m", "acp_proxy", *args], text=False, input=stdin, timeout=30, cwd=REPO
    )


def _client_bytes() -> bytes:
    entries = [json.loads(line) for line in FILES["frames"].read_text().splitlines()]
    return "".join(e["raw"] for e in entries if e["direction"] == "c2a").encode()


@pytest.mark.parametrize("fmt", FILES)
def test_show_check_export_and_replay_read_each_capture_file(fmt: str, tmp_path: Path) -> None:
    path = str(FILES[fmt])
    env_db = ("--db", str(tmp_path / "unused.sqlite"))
    shown = _cli("show", *env_db, path)
    assert shown.returncode == 0, shown.stderr
    assert b"session/request_permission" in shown.stdout
    checked = _cli("check", *env_db, path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    exported = _cli("export", *env_db, path, "--format", "markdown")
    assert exported.returncode == 0, exported.stderr
    assert b"It says: a tiny demo." in exported.stdout
    replayed = _cli("replay", *env_db, path, stdin=_client_bytes())
    assert replayed.returncode == 0, replayed.stderr
    assert b"It says: a tiny demo." in replayed.stdout
    assert b"No divergence." in replayed.stderr


def test_imported_captures_diff_equal_to_each_other(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    for path in FILES.values():
        done = _cli("import", "--db", str(db), str(path))
        assert done.returncode == 0, done.stderr
    for label in ("sacp-conductor-trace", "zed-acp-log", "readme question"):
        done = _cli("diff", "--db", str(db), "raw-frames", label)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith(b"same:")


_LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c2a", "a2c", "stderr"]), _LINE), max_size=12))
def test_raw_frames_round_trip_to_the_exact_bytes(frames: list[tuple[str, bytes]]) -> None:
    lines = []
    for direction, raw in frames:
        try:
            entry: dict[str, Any] = {"direction": direction, "raw": raw.decode("utf-8")}
        except UnicodeDecodeError:
            entry = {"direction": direction, "raw_base64": base64.b64encode(raw).decode()}
        lines.append(json.dumps(entry).encode() + b"\n")
    records = list(captures.read("frames", lines).frames)
    assert [(r.direction.value, r.raw) for r in records] == frames


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(captures.FORMATS), st.lists(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["direction", "raw", "raw_base64", "mono_ns", "type", "ts", "from", "to",
                         "id", "is_error", "payload", "method", "params", "_direction", "_type",
                         "version", "session", "messages", "timestamp", "x"]), inner, max_size=6),
    max_leaves=12), max_size=4))  # fmt: skip
def test_any_json_is_read_or_refused_never_crashes(fmt: str, items: list[Any]) -> None:
    lines = [json.dumps(item).encode() + b"\n" for item in items]
    document: Any = items if fmt == "zed-log" else (items[0] if items else {})
    if fmt == "acp-devtools" and not (
        isinstance(document, dict) and isinstance(document.get("session"), dict)
        and isinstance(document.get("messages"), list)
    ):  # fmt: skip
        return  # detect() never hands such a document to this reader
    try:
        capture = captures.read(fmt, lines, document)
        frames = list(capture.frames)
    except captures.CaptureError:
        return
    assert all(isinstance(f.raw, bytes) for f in frames)
