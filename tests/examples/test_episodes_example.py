"""Testing an ACP client against a cassette of several recorded conversations (episodes)."""

import subprocess
import sys

import pytest

AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]  # only used to record new episodes


@pytest.mark.parametrize("prompt", ["hello", "read the readme"])
@pytest.mark.acp_cassette("demo-episodes", agent=AGENT, record_mode="new_episodes")
def test_client_finishes_each_turn(acp_agent_command: list[str], prompt: str) -> None:
    # A prompt the cassette holds replays its episode; a new one is recorded with AGENT
    # (caught up with what the client was told) and appended to the cassette.
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", prompt, "--"]
    done = subprocess.run(
        [*client, *acp_agent_command], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "end_turn" in done.stdout
