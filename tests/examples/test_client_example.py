"""Testing an ACP client against a cassette: the agent is a replay of a recorded conversation."""

import subprocess
import sys

import pytest

CLIENT = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", "hello"]
AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]  # only used to record the cassette


@pytest.mark.acp_cassette("demo-hello", agent=AGENT)
def test_client_shows_the_agent_reply(acp_agent_command: list[str]) -> None:
    done = subprocess.run(
        [*CLIENT, "--", *acp_agent_command], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "end_turn" in done.stdout
