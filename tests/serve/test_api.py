"""The inspector's HTTP side against a real ``acp-proxy ui`` process: the gate, the event
stream's resume, the JSON endpoints, recording files as REF, and its read-only promise.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from acp_proxy.serve.ui.app import version
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION, update
from tests.support.helpers import A2C, C2A, line, observe_all, write_recording
from tests.support.ui_server import Served, wait_for

pytestmark = pytest.mark.timeout(60)


def chunks(n: int, text: str = "tok") -> list[tuple[Any, bytes]]:
    return [
        (A2C, update("s", {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                           "content": {"type": "text", "text": f"{text}{i} "}}))
        for i in range(n)
    ]  # fmt: skip


CHUNKED = [
    (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {
        "sessionId": "s", "prompt": [{"type": "text", "text": "Hello World"}]}})),
    *chunks(5),
    (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
]  # fmt: skip


def get(served: Served, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(served.url + path, timeout=10, **kwargs)


@pytest.fixture
def served(db_path: Path, serve_ui: Any) -> Served:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    write_recording(db_path, CHUNKED, label="chunked")
    result: Served = serve_ui("--db", str(db_path))
    return result


def test_every_request_needs_the_token(served: Served) -> None:
    base = f"http://127.0.0.1:{served.port}"
    other = served.token[:-1] + ("y" if served.token.endswith("x") else "x")  # one letter off
    for path in ("/", "/api/connections", "/static/app.js", f"/{other}/api/info"):
        response = httpx.get(base + path, timeout=10)
        assert response.status_code == 403, path
        assert "token" in response.text
    assert get(served, "api/info").status_code == 200
    short = httpx.get(base + f"/{served.token}", timeout=10)
    assert short.status_code == 307
    assert short.headers["location"] == f"/{served.token}/"


def test_a_wrong_host_header_is_refused(served: Served) -> None:
    for host in ("evil.example", f"evil.example:{served.port}", "127.0.0.1:1", ""):
        response = get(served, "api/info", headers={"host": host})
        assert response.status_code == 403, host
        assert "Host" in response.text
    for host in (f"localhost:{served.port}", f"127.0.0.1:{served.port}"):
        assert get(served, "api/info", headers={"host": host}).status_code == 200


def test_nothing_but_reads_and_the_headers_say_so(served: Served, db_path: Path) -> None:
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = httpx.request(method, served.url + "api/connections", timeout=10)
        assert response.status_code == 405, method
    page = get(served, "")
    csp = page.headers["content-security-policy"]
    # The page's own files, and its one inline start-up script by its hash: no other.
    inline = re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL)
    assert len(inline) == 1
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}';" in csp
    assert "unsafe-inline" not in csp
    assert "default-src 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="static/page.js?v=' in page.text
    assert len(re.findall(r"<script", page.text)) == 2
    # The page's files are named with their version: kept by the browser for as long as it
    # likes; the page itself, and a file asked for without its version, are asked again.
    assert page.headers["cache-control"] == "no-cache"
    for name in re.findall(r'(?:href|src)="(static/[^"]+)"', page.text):
        kept = get(served, name)
        assert kept.status_code == 200, name
        assert kept.headers["cache-control"] == "private, max-age=31536000, immutable", name
        assert f"?v={version(kept.content)}" in name
        fresh = get(served, name.split("?")[0])
        assert fresh.content == kept.content
        assert fresh.headers["cache-control"] == "no-cache"
        assert get(served, name.split("?")[0] + "?v=old").headers["cache-control"] == "no-cache"
    for path in ("api/connections", "api/connections/2/rows", "api/connections/2/frames/1",
                 "api/connections/1/conversation", "api/connections/1/latency",
                 "api/connections/1/findings", "api/diff?a=1&b=2"):  # fmt: skip
        response = get(served, path)
        assert response.status_code == 200, path
        assert response.headers["cache-control"] == "no-store"
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before


def test_rows_collapse_a_chunk_run_and_filter(served: Served) -> None:
    rows = get(served, "api/connections/2/rows").json()
    assert rows["total"] == 3
    assert rows["caught_up"]
    assert not rows["complete"]  # write_recording leaves the connection running
    run = rows["rows"][1]
    assert (run["first_seq"], run["last_seq"], run["count"]) == (2, 6, 5)
    assert run["text"] == "tok0 tok1 tok2 tok3 tok4 "
    assert rows["rows"][0]["pair_seq"] == 7
    assert rows["rows"][2]["pair_seq"] == 1
    assert rows["rows"][2]["latency_ns"] == 6_000_000
    found = get(served, "api/connections/2/rows", params={"text": "hello world"}).json()
    assert [r["first_seq"] for r in found["rows"]] == [1]
    only = get(served, "api/connections/2/rows", params={"direction": "a2c", "kind": "response"})
    assert [r["first_seq"] for r in only.json()["rows"]] == [7]
    run_frames = get(served, "api/connections/2/frames", params={"first": 2, "last": 6})
    assert [f["seq"] for f in run_frames.json()["frames"]] == [2, 3, 4, 5, 6]
    located = get(served, "api/connections/2/locate", params={"seq": 4}).json()
    assert located == {"index": 1, "total": 3, "caught_up": True, "behind": False,
                       "scanned_seq": 7}  # fmt: skip
    # A timeline that starts at a frame: positions count from there, the run is cut there.
    started = get(served, "api/connections/2/rows", params={"from": 4}).json()
    assert [(r["first_seq"], r["count"]) for r in started["rows"]] == [(4, 3), (7, 1)]
    located = get(served, "api/connections/2/locate", params={"seq": 7, "from": 4}).json()
    assert located["index"] == 1
    assert get(served, "api/connections/2/rows", params={"direction": "up"}).status_code == 400
    assert get(served, "api/connections/9/rows").status_code == 404
    for beyond in (2**63, 2**64, 10**30):  # past what SQLite holds: nothing, not a failure
        assert get(served, f"api/connections/{beyond}/rows").status_code == 404
        assert get(served, f"api/connections/2/frames/{beyond}").status_code == 404


def test_frame_detail_pair_bytes_descriptions_and_findings(served: Served) -> None:
    detail = get(served, "api/connections/2/frames/1").json()
    assert detail["json"]["method"] == "session/prompt"
    assert detail["pair"]["seq"] == 7
    assert detail["latency_ns"] == 6_000_000
    assert "".join(text for text, _ in detail["segments"]) == (
        json.dumps(detail["json"], separators=(",", ":")) + "\\n"
    )
    paths = dict(detail["descriptions"])
    assert "$.params.prompt" in paths
    raw = get(served, "api/connections/2/frames/1/raw")
    assert raw.content.startswith(b'{"jsonrpc":"2.0","id":1,"method":"session/prompt"')
    checked = wait_for(
        lambda: (f := get(served, "api/connections/2/findings").json())["complete"] and f,
        "the rule engine",
    )
    # No initialize, no session/new: the prompt names a session nobody opened.
    # Each rule's words come once, beside the findings that name it.
    assert any(f["seq"] == 1 and checked["rules"][f["rule"]]["fix"] for f in checked["findings"])
    assert any(f["rule"] for f in get(served, "api/connections/2/frames/1").json()["findings"])


def test_a_remote_frame_detail_says_which_stream_carried_it(db_path: Path, serve_ui: Any) -> None:
    from tests.support.remote_recordings import http_exchanges, http_frames, write_remote

    write_remote(db_path, "http", http_exchanges(), http_frames())
    write_recording(db_path, CHUNKED, label="stdio")
    served: Served = serve_ui("--db", str(db_path))
    carried = [get(served, f"api/connections/1/frames/{seq}").json()["carrier"] for seq in (3, 6)]
    assert carried == [
        {"stream": "post", "exchange": 3, "status": 202,
         "text": "HTTP POST body, exchange 3, status 202"},
        {"stream": "session_sse", "exchange": 4, "status": 200,
         "text": "session SSE stream, exchange 4"},
    ]  # fmt: skip
    assert "carrier" not in get(served, "api/connections/2/frames/1").json()


def test_frame_detail_of_json_nested_without_limit(db_path: Path, serve_ui: Any) -> None:
    nested = "[" * 5000 + '"deep"' + "]" * 5000
    deep = f'{{"jsonrpc":"2.0","method":"x/deep","params":{{"v":{nested}}}}}\n'.encode()
    write_recording(db_path, [(C2A, deep)], label="deep")
    served: Served = serve_ui("--db", str(db_path))
    response = get(served, "api/connections/1/frames/1")
    assert response.status_code == 200
    detail = response.json()
    assert detail["json"] is None  # too deep for a tree: the page shows the bytes
    assert detail["frame"]["kind"] == "notification"
    assert get(served, "api/connections/1/rows").status_code == 200


def events(
    response: httpx.Response, wanted: int, timeout: float = 10.0
) -> Iterator[dict[str, Any]]:
    """Parse server-sent events off a streaming response until ``wanted`` frame events."""
    deadline = time.monotonic() + timeout
    event: dict[str, Any] = {}
    got = 0
    for text in response.iter_lines():
        assert time.monotonic() < deadline, "the stream went quiet"
        if not text:
            if event.get("event") == "frame":
                got += 1
                yield event
                if got == wanted:
                    return
            event = {}
            continue
        name, _, value = text.partition(": ")
        event[name] = value


def test_the_event_stream_resumes_without_gap_or_duplicate(db_path: Path, serve_ui: Any) -> None:
    db = connect(db_path)
    other = RecordingWriter.start(db, NewConnection(["other"], "/", "t", 1))
    writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "t", 1, label="live"))
    _, records = observe_all(chunks(60))
    served: Served = serve_ui("--db", str(db_path))
    writer.append(records[:20])
    other.append(records[:5])
    url = served.url + f"api/events?connection={writer.connection_id}&after=0"
    seen: list[int] = []
    with httpx.stream("GET", url, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in events(response, 12):
            seen.append(int(event["id"]))
    writer.append(records[20:40])  # committed while nobody listens
    headers = {"last-event-id": str(seen[-1])}
    with httpx.stream("GET", url, timeout=10, headers=headers) as response:
        for index, event in enumerate(events(response, 60 - len(seen))):
            seen.append(int(event["id"]))
            data = json.loads(event["data"])
            assert data["connection_id"] == writer.connection_id
            if index == 10:
                writer.append(records[40:])  # committed while it streams
                other.append(records[5:10])
            if len(seen) == 60:
                break
    query = "SELECT id FROM frame WHERE connection_id = ? ORDER BY id"
    ids = [int(r[0]) for r in db.execute(query, (writer.connection_id,))]
    assert seen == ids
    assert len(set(seen)) == 60
    db.close()


def test_a_jsonl_export_or_bundle_opens_as_a_recording(
    db_path: Path, tmp_path: Path, serve_ui: Any
) -> None:
    write_recording(db_path, CHUNKED, label="exported")
    export = tmp_path / "rec.jsonl"
    done = CliRunner().invoke(cli, ["export", "exported", "-o", str(export), "--db", str(db_path)])
    assert done.exit_code == 0, done.output
    served: Served = serve_ui(str(export))
    info = get(served, "api/info").json()
    cid = info["initial"]["connection"]
    rows = get(served, f"api/connections/{cid}/rows").json()
    assert [r["count"] for r in rows["rows"]] == [1, 5, 1]


def test_usage_mistakes_are_one_line(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["ui", "--db", str(db_path / "nope.sqlite"), "--no-open"])
    assert missing.exit_code == 2
    said = capfd.readouterr().err
    assert said.startswith("acp-proxy: no recording database at")
    assert said.count("\n") == 1
    write_recording(db_path, CHUNKED)
    unknown = runner.invoke(cli, ["ui", "nosuchlabel", "--db", str(db_path), "--no-open"])
    assert unknown.exit_code == 2
    assert "acp-proxy: no recording matches 'nosuchlabel'" in capfd.readouterr().err
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    without = runner.invoke(cli, ["ui", "--db", str(db_path), "--no-open"])
    assert without.exit_code == 2
    assert capfd.readouterr().err == (
        "acp-proxy: the ui needs uvicorn: pip install 'acp-proxy[ui]'\n"
    )


def test_another_host_is_warned_about(db_path: Path, serve_ui: Any) -> None:
    write_recording(db_path, CHUNKED)
    served: Served = serve_ui("--db", str(db_path), "--host", "127.0.0.2")
    assert "warning: serving on 127.0.0.2, not loopback" in served.log.read_text()
    assert served.url.startswith("http://127.0.0.2:")
    assert get(served, "api/info").status_code == 200


def test_streams_at_once_each_get_every_frame_once(db_path: Path, serve_ui: Any) -> None:
    """Streams share one watcher and one encoding of each frame: each still gets every frame
    once and in order, whether it started from the beginning or joined later."""
    import threading

    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "t", 1, label="live"))
    _, records = observe_all(chunks(90))
    writer.append(records[:10])
    served: Served = serve_ui("--db", str(db_path))
    url = served.url + f"api/events?connection={writer.connection_id}&after=0"
    seen: dict[int, list[int]] = {}
    opened = threading.Barrier(4)

    def listen(name: int) -> None:
        with httpx.stream("GET", url, timeout=20) as response:
            got = seen.setdefault(name, [])
            stream = events(response, 90, timeout=20)
            got.append(int(next(stream)["id"]))
            opened.wait(timeout=20)
            got += [int(e["id"]) for e in stream]

    listeners = [threading.Thread(target=listen, args=(n,)) for n in range(3)]
    for listener in listeners:
        listener.start()
    opened.wait(timeout=20)
    for start in range(10, 90, 20):  # committed while the three stream
        writer.append(records[start : start + 20])
    for listener in listeners:
        listener.join(timeout=30)
    query = "SELECT id FROM frame WHERE connection_id = ? ORDER BY id"
    ids = [int(r[0]) for r in db.execute(query, (writer.connection_id,))]
    assert len(ids) == 90
    assert [seen[n] for n in range(3)] == [ids, ids, ids]
    db.close()


def test_a_shared_answer_never_hides_a_grown_index(db_path: Path, serve_ui: Any) -> None:
    """While pages stream, answers are shared per change; an answer from an index still being
    built must not come back once the index has grown (nothing was committed in between)."""
    plain = [
        (C2A, line({"jsonrpc": "2.0", "method": "x", "params": {"i": i}})) for i in range(9000)
    ]
    write_recording(db_path, plain, label="big")
    served: Served = serve_ui("--db", str(db_path))
    with httpx.stream("GET", served.url + "api/events?connection=1&frames=0", timeout=20) as live:
        lines = live.iter_lines()
        wait_for(lambda: next(lines).startswith("event: connections"), "the watcher's first look")
        first = get(served, "api/connections/1/rows").json()
        assert not first["caught_up"]  # 9,000 frames: the first call indexes only a part
        grown = first
        while not grown["caught_up"]:
            grown = get(served, "api/connections/1/rows", params={"scan": "1"}).json()
        again = get(served, "api/connections/1/rows").json()
        assert again["total"] == grown["total"] == 9000
        assert again["caught_up"]


def test_no_websocket_is_served(served: Served) -> None:
    # The page's live stream is server-sent events: a websocket handshake is not taken up (the
    # server loads no websocket protocol, so its first answers wait for no such import).
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as conn:
        conn.sendall(
            f"GET /{served.token}/api/info HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
            "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            part = conn.recv(4096)
            if not part:
                break
            answer += part
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
