"""ls, show, tail and stats on recordings built from the spec fixtures (no process needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.cli import run
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.fixtures_transcript import V2_WALKTHROUGH
from tests.support.helpers import observe_all, write_recording
from tests.support.processes import run_to_end, started


@pytest.fixture
def recorded(db_path: Path) -> Path:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    write_recording(db_path, V2_WALKTHROUGH, label="v2")
    return db_path


def test_ls_lists_connections_and_sessions(recorded: Path) -> None:
    lines = run(recorded, "ls").output.splitlines()
    assert lines[0].startswith("1 v1 ")
    assert "agent-x 2.0 <- zed 1.0" in lines[0]
    assert "16 frames  1 turn " in lines[0]
    assert lines[0].endswith(", 1 error")
    assert lines[1].split() == ["session", "sess_1", "1", "turn"]
    assert lines[2].startswith("2 v2 ")
    assert "\x1b[" not in run(recorded, "ls").output  # plain when not a terminal
    records = [json.loads(x) for x in run(recorded, "ls", "--json").output.splitlines()]
    assert [(r["id"], r["protocol_version"], r["prompt_turns"]) for r in records] == [
        (1, 1, 1),
        (2, 2, 1),
    ]
    last_two = run(recorded, "ls", "-n", "1").output.splitlines()
    assert len(last_two) == 3
    assert last_two[-1].startswith(f"{recorded}: 2 connections, ")
    assert last_two[-1].endswith(" KB")


def test_show_is_one_line_per_frame_with_latency(recorded: Path) -> None:
    lines = run(recorded, "show", "v1").output.splitlines()
    assert len(lines) == len(V1_CONVERSATION)
    fields = lines[1].split()
    assert fields[:5] == ["2", "+0.001s", "a2c", "response", "initialize"]
    assert "1.0 ms" in lines[1]
    prompt_end = next(x for x in lines if "end_turn" in x)
    assert "session/prompt [2] end_turn 8.0 ms" in prompt_end
    assert "err stderr" in lines[2]
    assert "agent_message_chunk Hello" in next(x for x in lines if "agent_message_chunk" in x)


def test_show_filters(recorded: Path) -> None:
    def seqs(*args: str) -> list[int]:
        return [int(x.split()[0]) for x in run(recorded, "show", *args).output.splitlines()]

    assert seqs("v1", "--kind", "error") == [16]
    # c2a: the client's requests, and its answer to the agent's permission request (seq 10).
    assert seqs("v1", "--method", "session/*", "--direction", "client") == [4, 6, 10, 15]
    assert seqs("v1", "--kind", "agent_message_chunk") == [11]
    assert seqs("v1", "--grep", "Hello") == [11]
    # The one case rule of every frame filter (the inspector's too): ASCII letters either case.
    assert seqs("v1", "--grep", "hELLO") == [11]
    assert seqs("v1", "--grep", "H_llo") == []  # LIKE's wildcards are plain characters
    assert seqs("v2", "--session", "sess_abc123def456", "--kind", "state_update") == [8, 20, 22, 26]
    assert seqs("v1", "--from", "10", "-n", "2") == [10, 11]  # inclusive
    assert seqs("v1", "--from", "10", "--to", "12") == [10, 11, 12]
    assert seqs("v1", "--direction", "stderr") == [3]


def test_show_raw_json_and_pretty(recorded: Path) -> None:
    raw = CliRunner().invoke(
        cli, ["show", "v1", "--raw", "--direction", "c2a", "--db", str(recorded)]
    )
    assert raw.stdout_bytes == b"".join(
        d for direction, d in V1_CONVERSATION if direction.value == "c2a"
    )
    records = [json.loads(x) for x in run(recorded, "show", "v1", "--json").output.splitlines()]
    assert records[0]["message"]["method"] == "initialize"
    assert records[2] == {**records[2], "kind": "stderr", "text": "agent: starting up\n"}
    assert records[1]["latency_ms"] == 1.0
    pretty = run(recorded, "show", "v1", "--pretty", "-n", "1").output
    assert '\n    {\n      "jsonrpc": "2.0",' in pretty


def test_show_of_odd_bytes_never_fails(db_path: Path) -> None:
    from tests.support.helpers import A2C, C2A

    write_recording(db_path, [(C2A, b"\xff\xfe not utf8\n"), (A2C, b"[]\n"), (A2C, b'{"no": 1}\n')])
    lines = run(db_path, "show").output.splitlines()
    assert len(lines) == 3
    assert "bad_json,bad_utf8" in lines[0]
    records = [json.loads(x) for x in run(db_path, "show", "--json").output.splitlines()]
    assert records[0]["raw_base64"]
    assert records[2]["flags"] == ["not_jsonrpc"]


def test_unknown_ref_and_missing_database(recorded: Path, tmp_path: Path) -> None:
    def fails(db: Path, *args: str) -> str:
        argv = [sys.executable, "-m", "acp_proxy", *args, "--db", str(db)]
        done = run_to_end(argv, timeout=30)
        assert (done.returncode, done.stdout) == (2, "")  # an unusable REF: a usage error
        return done.stderr

    assert fails(recorded, "show", "nope").startswith("acp-proxy: no recording matches 'nope'")
    assert "no recording database" in fails(tmp_path / "none.sqlite", "ls")
    assert not (tmp_path / "none.sqlite").exists()


def test_stats_per_turn(recorded: Path) -> None:
    lines = run(recorded, "stats", "v2").output.splitlines()
    assert lines[0].split()[:3] == ["session", "turn", "accepted"]
    row = lines[1].split()
    assert row[:2] == ["sess_abc123def456", "1"]
    assert "end_turn" in row
    (turn,) = [json.loads(x) for x in run(recorded, "stats", "v2", "--json").output.splitlines()]
    assert turn["accepted_ms"] == 1.0  # the v2 receipt came 1 ms after the prompt
    assert (turn["tool_calls"], turn["permissions"], turn["permission_wait_ms"]) == (1, 1, 2.0)
    assert turn["duration_ms"] == 21.0
    assert turn["usage"]["used"] == 53000
    (v1,) = [json.loads(x) for x in run(recorded, "stats", "v1", "--json").output.splitlines()]
    assert (v1["accepted_ms"], v1["duration_ms"], v1["stop_reason"]) == (None, 8.0, "end_turn")


def test_tail_shows_the_last_frames(recorded: Path) -> None:
    lines = run(recorded, "tail", "v1", "-n", "2").output.splitlines()
    assert [int(x.split()[0]) for x in lines] == [15, 16]


def test_tail_follows_a_live_recording(db_path: Path) -> None:
    """A writer appends while ``tail -f`` runs; tail prints each frame and exits with the agent."""
    _, records = observe_all(V2_CONVERSATION)
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "test", 1, label="live"))
    writer.append(records[:2])
    argv = [sys.executable, "-m", "acp_proxy", "tail", "-f", "live", "--interval", "0.05"]
    with started([*argv, "--db", str(db_path)], stdout=subprocess.PIPE) as tail:
        try:
            assert tail.stdout is not None
            seen = [tail.stdout.readline() for _ in range(2)]
            assert [int(x.split()[0]) for x in seen] == [1, 2]
            for record in records[2:]:
                writer.append([record])
                line = tail.stdout.readline()  # blocks until tail has printed it
                assert int(line.split()[0]) == record.seq
            writer.update(status="exited", exit_code=0)
            assert tail.wait(timeout=20) == 0
            assert tail.stdout.read() == b""
        finally:
            tail.kill()  # only if a check above failed while it was still following
    db.close()


def test_show_ends_quietly_when_the_pipe_closes(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION * 200)
    argv = [sys.executable, "-m", "acp_proxy", "show", "--db", str(db_path)]
    with started(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as show:
        assert show.stdout is not None
        assert show.stderr is not None
        show.stdout.readline()
        show.stdout.close()
        assert show.wait(timeout=20) == 0
        assert show.stderr.read() == b""
