"""``acp-proxy replay`` as a process: a scripted client on its stdin, the agent bytes on stdout."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.processes import run_to_end, started
from tests.support.replay_helpers import agent_bytes, client_frames, lines

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 20


def replay_argv(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "acp_proxy", "replay", "--db", str(db), *args]


def run(db: Path, stdin: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_to_end(replay_argv(db, *args), text=False, input=stdin, timeout=WAIT_S, cwd=REPO)


@pytest.fixture
def v1_db(tmp_path: Path) -> Path:
    db = tmp_path / "r.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    write_recording(db, V2_CONVERSATION, label="v2")
    return db


def test_a_scripted_client_gets_the_recorded_agent_bytes(v1_db: Path) -> None:
    done = run(v1_db, b"".join(client_frames(V1_CONVERSATION)), "v1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == agent_bytes(V1_CONVERSATION)
    summary = done.stderr.decode()
    assert summary.startswith("acp-proxy: replay of connection 1 (v1): sent 9 agent frames")
    assert summary.count("\n") == 1
    assert "No divergence." in summary


def test_two_replays_give_identical_bytes(v1_db: Path) -> None:
    stdin = b"".join(client_frames(V2_CONVERSATION))
    first, second = run(v1_db, stdin, "v2"), run(v1_db, stdin, "v2", "--timing", "x1000")
    assert first.stdout == second.stdout == agent_bytes(V2_CONVERSATION)
    assert "dropped 1 notice," in first.stderr.decode()


def test_usage_errors_exit_2_in_one_line(v1_db: Path) -> None:
    for args in (["nope"], ["v1", "--timing", "x0"], ["v1", "--ignore", "params"],
                 ["v1", "--session", "missing"]):  # fmt: skip
        done = run(v1_db, b"", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert b"Traceback" not in done.stderr
        assert done.stdout == b""


def test_a_different_prompt_ends_with_an_error_naming_the_expected_request(v1_db: Path) -> None:
    frames = client_frames(V1_CONVERSATION)
    frames[2] = frames[2].replace(b'"hi"', b'"bye"')
    done = run(v1_db, b"".join(frames), "v1")
    assert done.returncode == 1
    error = lines(done.stdout)[-1]
    assert error["id"] == 2
    assert error["error"]["code"] == -32090
    assert "expected session/prompt request (recorded seq 6)" in error["error"]["message"]
    err = done.stderr.decode()
    assert "Ended (recorded seq 6): mismatch: no recorded request matches" in err
    assert err.count("no recorded request matches") == 1  # why it ended, said once


def test_a_client_that_never_answers_the_permission_request(v1_db: Path) -> None:
    with started(
        replay_argv(v1_db, "v1", "--timeout", "1"), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(b"".join(client_frames(V1_CONVERSATION)[:3]))
        proc.stdin.flush()  # stdin stays open: the client just never answers
        assert proc.wait(timeout=WAIT_S) == 1
        out = proc.stdout.read() if proc.stdout else b""
    last = lines(out)[-1]
    assert last["id"] == 2
    assert (
        "timed out after 1s waiting for the client's answer to "
        "session/request_permission" in last["error"]["message"]
    )
    assert b"session/request_permission" in out


def test_sigterm_after_the_whole_recording_is_a_clean_end(v1_db: Path) -> None:
    expected = agent_bytes(V1_CONVERSATION)
    with started(
        replay_argv(v1_db, "v1"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=REPO,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b"".join(client_frames(V1_CONVERSATION)))
        proc.stdin.flush()
        got = b""
        while len(got) < len(expected):
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, "replay ended early"
            got += chunk
        proc.send_signal(signal.SIGTERM)  # as the SDK clients end their agent
        proc.wait(timeout=WAIT_S)
        rest = proc.stdout.read()
        err = proc.stderr.read() if proc.stderr else b""
    assert got + rest == expected
    assert proc.returncode == 0, err
    assert b"Ended: ended by SIGTERM. No divergence." in err


def test_record_keeps_the_replay_and_diff_finds_it_equal(v1_db: Path) -> None:
    done = run(v1_db, b"".join(client_frames(V2_CONVERSATION)), "v2", "--record")
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(v1_db)
    ((conn_id, argv, exit_code),) = con.execute(
        "SELECT id, argv, exit_code FROM connection ORDER BY id DESC LIMIT 1"
    )
    stderr_lines = [
        r[0]
        for r in con.execute(
            "SELECT raw FROM frame WHERE connection_id = ? AND direction = 'stderr'", (conn_id,)
        )
    ]
    agent = b"".join(r[0] for r in con.execute(
        "SELECT raw FROM frame WHERE connection_id = ? AND direction = 'a2c' ORDER BY seq",
        (conn_id,)))  # fmt: skip
    con.close()
    assert conn_id == 3
    assert '"replay"' in argv
    assert exit_code == 0
    assert agent == agent_bytes(V2_CONVERSATION)
    assert len(stderr_lines) == 1
    assert b"dropped 1 notice," in stderr_lines[0]
    diff = run_to_end(
        [
            sys.executable,
            "-m",
            "acp_proxy",
            "diff",
            "--db",
            str(v1_db),
            "v2",
            "3",
            "--ignore",
            "$..params.update[?(@.sessionUpdate)]",
        ][:-2],
        text=False,
        timeout=WAIT_S,
        cwd=REPO,
    )
    # the original holds a notice the replay dropped: that is the one difference
    assert diff.returncode == 1
    assert b"notice" in diff.stdout


def test_a_jsonl_export_replays_like_the_recording(v1_db: Path, tmp_path: Path) -> None:
    export = tmp_path / "v1.jsonl"
    run_to_end(
        [
            sys.executable,
            "-m",
            "acp_proxy",
            "export",
            "--db",
            str(v1_db),
            "v1",
            "--format",
            "jsonl",
            "-o",
            str(export),
        ],
        text=False,
        check=True,
        timeout=WAIT_S,
        cwd=REPO,
    )
    done = run(v1_db, b"".join(client_frames(V1_CONVERSATION)), str(export))
    assert done.returncode == 0, done.stderr
    assert done.stdout == agent_bytes(V1_CONVERSATION)


@pytest.mark.parametrize("name", ["v1", "v2", "v2-walkthrough", "v2-resume", "v1-load"])
def test_the_script_from_verbatim_rows_is_the_script_from_whole_frames(
    tmp_path: Path, name: str
) -> None:
    from acp_proxy.replay.match import Matcher
    from acp_proxy.replay.script import build
    from acp_proxy.store.replay_reads import load, load_script
    from tests.support.fixtures_replay import V1_LOAD, V2_RESUME
    from tests.support.fixtures_transcript import V2_WALKTHROUGH

    exchange = {"v1": V1_CONVERSATION, "v2": V2_CONVERSATION, "v2-walkthrough": V2_WALKTHROUGH,
                "v2-resume": V2_RESUME, "v1-load": V1_LOAD}[name]  # fmt: skip
    db = tmp_path / "r.sqlite"
    write_recording(db, exchange)
    _, frames = load(db, "last")
    _, rows, _ = load_script(db, "last", None)
    assert any(len(row) == 4 for row in rows)  # some frames came as Verbatim rows
    whole, light = build(frames, Matcher()), build(rows, Matcher())
    assert whole.outs == light.outs
    assert whole.expects == light.expects
