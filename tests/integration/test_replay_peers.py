"""Replay to the official SDKs' example clients what their example agents said.

Each test records one conversation of an SDK pair through ``acp-proxy record`` (the usual
``bytetap -> acp-proxy record -> bytetap`` run of conftest.py), then runs the same client, with
the same stdin, twice against ``bytetap -> acp-proxy replay`` instead of the agent. The client
must print exactly what it printed with the live agent (the replay hands out the recorded
session ids, so nothing needs masking), send exactly the bytes the recorded client sent, and
receive exactly the recorded agent bytes, both times; the replay must exit 0 (no divergence).
The TypeScript agent asks the client for permission with id 0, the id of the client's own
first request: that round trip goes through the replay too. Its client prints updates as they
come, so it is replayed with the recorded pacing (gaps capped at 0.2 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import (
    A2C,
    C2A,
    ClientFactory,
    Middle,
    PeerRun,
    Recording,
    RunSpec,
    TapLog,
    exit_code,
    python_sdk_client,
    run_peers,
    tap,
)
from .test_python_sdk_peers import STDIN as PYTHON_STDIN
from .test_ts_sdk_peers import ts_client

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]


def replay_twice(
    client: ClientFactory,
    agent: list[str],
    stdin: bytes,
    cwd: Path,
    tmp_path: Path,
    timing: tuple[str, ...] = (),
) -> tuple[PeerRun, Recording, list[tuple[PeerRun, TapLog]]]:
    live = run_peers(RunSpec("live", client, agent, stdin, Middle.PROXY, cwd), tmp_path / "live")
    assert live.returncode == 0, live.stderr.decode()
    recording = live.assert_recording_exact()
    replays = []
    for n in (1, 2):
        logdir = tmp_path / f"replay-tap-{n}"
        replay = [sys.executable, "-m", "acp_proxy", "replay", "--db", str(live.db), "last",
                  "--timeout", "20", *timing]  # fmt: skip
        spec = RunSpec(f"replay-{n}", client, tap(logdir, replay), stdin, None, cwd)
        run = run_peers(spec, tmp_path / f"replay-{n}")
        replays.append((run, TapLog.read(logdir)))
    return live, recording, replays


def assert_replayed_exactly(
    live: PeerRun, recording: Recording, replays: list[tuple[PeerRun, TapLog]]
) -> None:
    for run, seen in replays:
        assert run.returncode == 0, run.stderr.decode()
        assert run.stdout == live.stdout, "the client showed something else"
        assert seen.c2a == recording.stream(C2A), "the client did not behave as recorded"
        assert seen.a2c == recording.stream(A2C), "the client did not get the recorded bytes"
        assert exit_code(seen.status) == 0, seen.stderr.decode()
        assert b"No divergence." in seen.stderr
    assert replays[0][1].a2c == replays[1][1].a2c


def test_python_sdk_client_gets_its_agents_conversation_back(
    python_examples: Path, tmp_path: Path
) -> None:
    agent = [sys.executable, str(python_examples / "agent.py")]
    client = python_sdk_client(python_examples)
    live, recording, replays = replay_twice(client, agent, PYTHON_STDIN, python_examples, tmp_path)
    assert_replayed_exactly(live, recording, replays)
    assert "Client sent:" in replays[0][0].stdout.decode()


@pytest.mark.slow
def test_ts_sdk_client_gets_its_agents_conversation_back_permission_included(
    node: str, ts_sdk: Path, tmp_path: Path
) -> None:
    agent = [node, str(ts_sdk / "dist" / "examples" / "agent.js")]
    client = ts_client(node, ts_sdk)
    # The client prints each update as it comes; at full speed its permission prompt would
    # overtake updates that came a second earlier live. Recorded pacing, with the agent's
    # one-second pauses cut to 0.2 s, shows the same screen.
    timing = ("--timing", "recorded", "--max-gap", "0.2")
    live, recording, replays = replay_twice(client, agent, b"1\n", tmp_path, tmp_path, timing)
    assert_replayed_exactly(live, recording, replays)
    calls = [(c.caller, c.id, c.method) for c in recording.rpc_calls()]
    assert (C2A, 0, "initialize") in calls
    assert (A2C, 0, "session/request_permission") in calls
    shown = replays[0][0].stdout.decode()
    assert "Permission requested: Modifying critical configuration file" in shown
    assert "Perfect!" in shown
    assert shown.endswith("✅ Agent completed with: end_turn\n")
