"""The official TypeScript SDK's example client and agent, with and without us in between.

``@agentclientprotocol/sdk`` 1.9.0 (installed by ``.ci/install-node-peers``) ships
``dist/examples/client.js`` and ``dist/examples/agent.js``. The client spawns its agent with a
hard-coded ``npx tsx <examples>/agent.ts``; a shim named ``npx`` first on PATH runs the command
under test instead. The conversation, in order:

* client -> agent: ``initialize`` (id 0), ``session/new`` (id 1), ``session/prompt`` (id 2);
* agent -> client: five ``session/update`` notifications a second apart (text, a tool call and
  its update, more text, a second tool call), then its own request
  ``session/request_permission`` with **id 0**, the same id as the client's first request;
* the client prints the options and reads the choice from its stdin ("1" allow, "2" reject),
  answers id 0, the agent sends one or two more updates and answers the prompt (``end_turn``);
* the client kills the agent (SIGTERM) and exits 0.

So this is the test where requests go both ways with clashing ids. The recording must keep the
two id-0 calls apart by direction. Mixed pairs (Python client with the TypeScript agent, which
gets JSON-RPC errors back in both directions; TypeScript client with the Python agent, which
logs to stderr) cross the SDKs. Every run is compared with a direct run of the same pair made
at the same time, and across the middle byte for byte (see conftest.py). The agent makes up a
random session id, which the client prints: stdout is compared with session ids masked.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_to_end

from .conftest import (
    A2C,
    C2A,
    ClientFactory,
    Launch,
    Middle,
    PeerRun,
    RunPair,
    python_sdk_client,
)

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]

MIDDLES = [pytest.param(m, id=m.value) for m in Middle]
SESSION_ID = re.compile(rb"\b[0-9a-f]{32}\b")  # the TS example agent's random session ids


def ts_client(node: str, sdk: Path) -> ClientFactory:
    """Launches dist/examples/client.js with an ``npx`` shim that starts the given agent."""

    def launch(agent: list[str], scratch: Path) -> Launch:
        shim = scratch / "bin" / "npx"
        shim.parent.mkdir()
        shim.write_text(
            "#!/bin/sh\n"
            "# Stands in for the `npx tsx .../agent.ts` that the example client hard-codes.\n"
            'if [ "$1" != tsx ]; then echo "npx shim: unexpected arguments: $*" >&2; exit 97; fi\n'
            f"exec {shlex.join(agent)}\n"
        )
        shim.chmod(0o755)
        env = {"PATH": f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        if node_major(node) < 19:  # Debian 12's node 18: the agent uses the global `crypto`
            env["NODE_OPTIONS"] = "--experimental-global-webcrypto"
        return Launch([node, str(sdk / "dist" / "examples" / "client.js")], env)

    return launch


@functools.cache
def node_major(node: str) -> int:
    version = run_to_end([node, "-p", "process.versions.node"], check=True)
    return int(version.stdout.split(".")[0])


def masked(output: bytes) -> bytes:
    return SESSION_ID.sub(b"<session-id>", output)


def assert_same_for_the_client(direct: PeerRun, tapped: PeerRun) -> None:
    assert direct.returncode == 0, direct.stderr.decode()
    assert tapped.returncode == 0, tapped.stderr.decode()
    assert masked(tapped.stdout) == masked(direct.stdout)
    assert tapped.stderr == direct.stderr


@pytest.mark.slow
@pytest.mark.parametrize("middle", MIDDLES)
@pytest.mark.parametrize(
    ("choice", "option_id"),
    [pytest.param("1", "allow", id="allow"), pytest.param("2", "reject", id="reject")],
)
def test_ts_client_with_ts_agent(
    node: str,
    ts_sdk: Path,
    run_pair: RunPair,
    tmp_path: Path,
    middle: Middle,
    choice: str,
    option_id: str,
) -> None:
    agent = [node, str(ts_sdk / "dist" / "examples" / "agent.js")]
    stdin = f"{choice}\n".encode()
    client = ts_client(node, ts_sdk)
    direct, tapped = run_pair(client, agent, stdin, middle, tmp_path)
    assert_same_for_the_client(direct, tapped)
    shown = direct.stdout.decode()
    assert "Permission requested: Modifying critical configuration file" in shown
    assert ("Perfect!" in shown) == (option_id == "allow")
    assert ("I understand you prefer not" in shown) == (option_id == "reject")
    assert shown.endswith("✅ Agent completed with: end_turn\n")

    tapped.assert_taps_agree()
    if middle is not Middle.PROXY:
        return
    recording = tapped.assert_recording_exact()
    recording.assert_connection_facts()
    calls = recording.rpc_calls()
    assert [(c.caller, c.id, c.method) for c in calls] == [
        (C2A, 0, "initialize"),
        (C2A, 1, "session/new"),
        (C2A, 2, "session/prompt"),
        (A2C, 0, "session/request_permission"),
    ]
    initialize, _, prompt, permission = calls
    # Both id-0 calls, told apart by direction, each answered by the other side.
    assert initialize.response["result"]["protocolVersion"] == 1
    assert permission.response["result"] == {
        "outcome": {"outcome": "selected", "optionId": option_id}
    }
    assert prompt.request_seq < permission.request_seq < permission.response_seq
    assert permission.response_seq < prompt.response_seq
    assert prompt.response["result"] == {"stopReason": "end_turn"}
    updates = [m for m in recording.messages(A2C) if m.get("method") == "session/update"]
    assert len(updates) == (7 if option_id == "allow" else 6)


@pytest.mark.slow
@pytest.mark.parametrize("middle", MIDDLES)
def test_python_client_with_ts_agent(
    node: str,
    ts_sdk: Path,
    python_examples: Path,
    run_pair: RunPair,
    tmp_path: Path,
    middle: Middle,
) -> None:
    """The Python client refuses the permission request: errors cross in both directions."""
    agent = [node, str(ts_sdk / "dist" / "examples" / "agent.js")]
    client = python_sdk_client(python_examples)
    stdin = b"please edit the config\n"
    direct, tapped = run_pair(client, agent, stdin, middle, tmp_path)
    assert_same_for_the_client(direct, tapped)
    assert direct.stderr == b"ERROR:root:Prompt failed: Method not found\n"

    tapped.assert_taps_agree()
    if middle is not Middle.PROXY:
        return
    recording = tapped.assert_recording_exact()
    recording.assert_connection_facts()
    calls = recording.rpc_calls()
    assert [(c.caller, c.id, c.method) for c in calls] == [
        (C2A, 0, "initialize"),
        (C2A, 1, "session/new"),
        (C2A, 2, "session/prompt"),
        (A2C, 0, "session/request_permission"),
    ]
    _, _, prompt, permission = calls
    assert permission.response["error"]["code"] == -32601  # the Python client's refusal
    assert prompt.response["error"]["code"] == -32601  # passed on by the agent
    assert permission.response_seq < prompt.response_seq


@pytest.mark.parametrize("middle", MIDDLES)
def test_ts_client_with_python_agent(
    node: str,
    ts_sdk: Path,
    python_examples: Path,
    run_pair: RunPair,
    tmp_path: Path,
    middle: Middle,
) -> None:
    """The Python agent logs to stderr, which the TypeScript client inherits."""
    agent = [sys.executable, str(python_examples / "agent.py")]
    client = ts_client(node, ts_sdk)
    direct, tapped = run_pair(client, agent, b"", middle, tmp_path)
    assert_same_for_the_client(direct, tapped)
    assert "Client sent:\nHello, agent!\n" in direct.stdout.decode()
    assert b"INFO:root:Received prompt request for session 0\n" in direct.stderr

    tapped.assert_taps_agree()
    assert tapped.agent_side.stderr == tapped.stderr
    if middle is not Middle.PROXY:
        return
    recording = tapped.assert_recording_exact()
    recording.assert_connection_facts()
    assert [(c.caller, c.id, c.method) for c in recording.rpc_calls()] == [
        (C2A, 0, "initialize"),
        (C2A, 1, "session/new"),
        (C2A, 2, "session/prompt"),
    ]
