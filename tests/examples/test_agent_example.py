"""Testing an ACP agent against a cassette: the client is a replay of a recorded conversation."""

import sys
from collections.abc import Callable

import pytest

AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]
CLIENT = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", "hello", "--"]


@pytest.mark.acp_cassette("demo-agent")
def test_agent_answers_as_recorded(acp_agent_driver: Callable[..., None]) -> None:
    # Replays the recorded client against AGENT; fails on the first frame that differs.
    # CLIENT is only used to record the cassette (when it is missing, or with record mode all).
    acp_agent_driver(AGENT, client=CLIENT)
