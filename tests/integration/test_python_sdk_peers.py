"""The official Python SDK's example client talking to its example agents, with and without us.

``examples/client.py`` (agent-client-protocol 0.12.1, from its sdist) spawns the agent named on
its command line, sends ``initialize`` and ``session/new``, then one ``session/prompt`` per line
of its stdin and prints the agent's message chunks; at EOF it terminates the agent (SIGTERM).
``examples/agent.py`` answers each prompt with "Client sent:" plus the prompt's blocks and logs
every request to stderr; ``examples/echo_agent.py`` echoes the blocks with ``_meta`` fields and
random session ids.

Why: a proxy that is transparent for our own fixtures may still not be for real peers (their
write patterns, their shutdown by signal, long lines, non-ASCII text). So each test runs the
same conversation twice at once: client -> agent directly, and client -> bytetap -> MIDDLE ->
bytetap -> agent. It checks that

* the client prints exactly the same stdout and stderr either way (the agent's stderr log
  reaches the client's stderr unchanged);
* the bytes on both sides of MIDDLE are identical in both directions, and on stderr;
* with MIDDLE = acp-proxy, the recording's frames of each direction, in seq order, concatenate
  to exactly those bytes, and pair up into the requests and responses the SDK sends.

MIDDLE = nothing is the harness checking itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import A2C, C2A, Middle, RunPair, python_sdk_client

pytestmark = [pytest.mark.peers, pytest.mark.timeout(90)]

# ~53 KB, echoed back: a long line both ways, yet under client.py's 64 KiB line limit.
LONG_PROMPT = " ".join(f"word{i}" for i in range(6000))
PROMPTS = ["hello there", "naïve café ✓ — ünïcödé", LONG_PROMPT]
STDIN = "".join(f"{prompt}\n" for prompt in PROMPTS).encode()
MIDDLES = [pytest.param(m, id=m.value) for m in Middle]


@pytest.mark.parametrize("middle", MIDDLES)
def test_client_with_example_agent(
    python_examples: Path, run_pair: RunPair, middle: Middle
) -> None:
    agent = [sys.executable, str(python_examples / "agent.py")]
    direct, tapped = run_pair(
        python_sdk_client(python_examples), agent, STDIN, middle, python_examples
    )
    assert direct.returncode == 0, direct.stderr.decode()
    assert tapped.returncode == 0, tapped.stderr.decode()

    expected = "".join(f"> | Agent: Client sent:\n| Agent: {p}\n" for p in PROMPTS) + "> "
    assert direct.stdout.decode() == expected, "the baseline is not what the example should do"
    assert tapped.stdout == direct.stdout
    assert tapped.stderr == direct.stderr

    tapped.assert_taps_agree()
    agent_log = tapped.agent_side.stderr
    assert b"INFO:root:Received initialize request\n" in agent_log
    assert agent_log.count(b"Received prompt request for session 0") == len(PROMPTS)
    assert agent_log in tapped.stderr, "the agent's stderr did not reach the client's stderr"

    if middle is Middle.PROXY:
        recording = tapped.assert_recording_exact()
        calls = [(c.caller, c.id, c.method, "result" in c.response) for c in recording.rpc_calls()]
        assert calls == [
            (C2A, 0, "initialize", True),
            (C2A, 1, "session/new", True),
            *[(C2A, 2 + i, "session/prompt", True) for i in range(len(PROMPTS))],
        ]
        updates = [m for m in recording.messages(A2C) if m.get("method") == "session/update"]
        assert len(updates) == 2 * len(PROMPTS)
        recording.assert_connection_facts()


@pytest.mark.parametrize("middle", MIDDLES)
def test_client_with_echo_agent(python_examples: Path, run_pair: RunPair, middle: Middle) -> None:
    agent = [sys.executable, str(python_examples / "echo_agent.py")]
    direct, tapped = run_pair(
        python_sdk_client(python_examples), agent, STDIN, middle, python_examples
    )
    assert direct.returncode == 0, direct.stderr.decode()
    assert tapped.returncode == 0, tapped.stderr.decode()
    assert direct.stdout.decode().count("| Agent: ") == len(PROMPTS)
    assert tapped.stdout == direct.stdout
    assert tapped.stderr == direct.stderr

    tapped.assert_taps_agree()
    assert tapped.agent_side.stderr == b""

    if middle is Middle.PROXY:
        recording = tapped.assert_recording_exact()
        session_id = recording.rpc_calls()[1].response["result"]["sessionId"]
        updates = [m["params"] for m in recording.messages(A2C) if "method" in m]
        assert [u["update"]["content"]["text"] for u in updates] == PROMPTS
        assert all(u["sessionId"] == session_id for u in updates)
        assert all(u["update"]["_meta"] == {"echo": True} for u in updates)
        recording.assert_connection_facts()
