"""``replay``, ``replay --to-agent`` and ``--go-live`` given SIGINT, SIGTERM or SIGHUP.

The agent (tests/support/agents/fake_agent.py ``pidfile``) says its pid and sleeps: it ends from
the signal replay passes on to its process group, or, when it ignores them, from SIGKILL after
the grace. Either way it is gone by the time replay has exited, and the exit status says how
the run ended (docs/replay.md, "Signals").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.processes import assert_gone, exists, wait_for_pid
from tests.support.replay_helpers import agent_bytes, client_frames, lines

FAKE = Path(__file__).resolve().parents[2] / "support" / "agents" / "fake_agent.py"
REPO = Path(__file__).resolve().parents[3]
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
WAIT_S = 20
GRACE_S = 1.0  # replay's grace is its --timeout when that is shorter than the default


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.sqlite"
    write_recording(path, V1_CONVERSATION, label="v1")
    return path


def start(db: Path, *args: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "acp_proxy", "replay", "--db", str(db), *args]
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )


def read_exactly(proc: subprocess.Popen[bytes], size: int) -> bytes:
    assert proc.stdout is not None
    got = b""
    while len(got) < size:
        chunk = os.read(proc.stdout.fileno(), size - len(got))
        assert chunk, "replay ended early"
        got += chunk
    return got


def end_with(proc: subprocess.Popen[bytes], signum: int) -> tuple[int, float, bytes, bytes]:
    """Send ``signum``; the exit status, seconds until exit, the rest of stdout, and stderr."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    start = time.monotonic()
    proc.send_signal(signum)
    status = proc.wait(timeout=WAIT_S)  # stdin stays open: the signal alone ends it
    seconds = time.monotonic() - start
    return status, seconds, proc.stdout.read(), proc.stderr.read()


def agent(pidfile: Path, *options: str) -> list[str]:
    return ["--", sys.executable, str(FAKE), "pidfile", str(pidfile), *options]


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_replay_ended_by_a_signal_midway_diverges(db: Path, signum: signal.Signals) -> None:
    first = agent_bytes(V1_CONVERSATION[:2])
    with start(db, "v1", "--timeout", str(GRACE_S)) as proc:
        assert proc.stdin is not None
        proc.stdin.write(client_frames(V1_CONVERSATION)[0])
        proc.stdin.flush()
        assert read_exactly(proc, len(first)) == first  # replay is serving: now the signal
        status, seconds, _, err = end_with(proc, signum)
    assert status == 1, err  # the client ended replay before the recording's end
    assert f"Ended: ended by {signum.name}.".encode() in err
    assert seconds < GRACE_S + WAIT_S / 4


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_replay_ended_by_a_signal_after_the_recording_is_a_clean_end(
    db: Path, signum: signal.Signals
) -> None:
    expected = agent_bytes(V1_CONVERSATION)
    with start(db, "v1") as proc:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(client_frames(V1_CONVERSATION)))
        proc.stdin.flush()
        assert read_exactly(proc, len(expected)) == expected
        status, _, rest, err = end_with(proc, signum)
    assert rest == b""
    assert status == 0, err
    assert f"Ended: ended by {signum.name}. No divergence.".encode() in err


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_to_agent_passes_the_signal_to_the_agent_and_exits_128_plus_n(
    db: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    pidfile = tmp_path / "pid"
    with start(db, "--to-agent", "--timeout", "10", "v1", *agent(pidfile)) as proc:
        pid = wait_for_pid(pidfile)
        status, seconds, out, err = end_with(proc, signum)
        assert not exists(pid), "the agent outlived replay"
    assert status == 128 + signum, err
    assert out == b""
    assert f"Ended: ended by {signum.name}.".encode() in err
    assert seconds < GRACE_S + WAIT_S / 4  # the agent died of the signal, not of SIGKILL


def test_to_agent_kills_an_agent_that_ignores_the_signal_after_the_grace(
    db: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    args = ("--to-agent", "--timeout", str(GRACE_S), "v1", *agent(pidfile, "--ignore-all"))
    with start(db, *args) as proc:
        pid = wait_for_pid(pidfile)
        status, seconds, _, err = end_with(proc, signal.SIGTERM)
        assert not exists(pid), "the agent outlived replay"
    assert status == 128 + signal.SIGTERM, err
    assert GRACE_S <= seconds < GRACE_S + WAIT_S / 4


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_go_live_ends_the_live_agent_and_says_it_did_not_catch_up(
    db: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    pidfile = tmp_path / "pid"
    frames = client_frames(V1_CONVERSATION)
    first = agent_bytes(V1_CONVERSATION[:2])
    other = frames[1].replace(b"[]", b'[{"name":"x"}]')  # no episode holds it: go live
    with start(db, "v1", "--go-live", "--timeout", str(GRACE_S), *agent(pidfile)) as proc:
        assert proc.stdin is not None
        proc.stdin.write(frames[0])
        proc.stdin.flush()
        assert read_exactly(proc, len(first)) == first
        proc.stdin.write(other)
        proc.stdin.flush()
        pid = wait_for_pid(pidfile)  # the agent is being caught up (it never answers)
        status, seconds, out, err = end_with(proc, signum)
        assert not exists(pid), "the agent outlived replay"
    assert status == 1, err  # the agent did not reproduce what the client was told
    assert f"ended by {signum.name}".encode() in err
    (answer,) = lines(out)  # the client's open request is answered
    assert answer["id"] == 1
    assert answer["error"]["data"] == {"replay": "stopped"}
    assert seconds < GRACE_S + WAIT_S / 4
    assert_gone(pid)
