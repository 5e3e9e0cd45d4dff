"""The pytest plugin with the official Python SDK's example client and agent (real peers).

The cassettes in ``cassettes/`` were recorded from these very programs (client.py talking to
agent.py through ``acp-proxy record``); the tests replay them, so they need neither peer's
counterpart.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.processes import run_to_end

pytestmark = pytest.mark.peers


@pytest.fixture
def acp_real_agent(python_examples: Path) -> list[str]:
    return [sys.executable, str(python_examples / "agent.py")]


@pytest.mark.acp_cassette("python-sdk-hello")
def test_sdk_client_against_a_cassette(python_examples: Path, acp_agent_command: list[str]) -> None:
    client = [sys.executable, str(python_examples / "client.py"), *acp_agent_command]
    done = run_to_end(client, input="hello there\n", timeout=30)
    assert "| Agent: hello there" in done.stdout, done.stderr


@pytest.mark.acp_cassette("python-sdk-hello")
def test_sdk_agent_against_a_cassette(
    python_examples: Path, acp_agent_driver: Callable[..., None]
) -> None:
    client = [sys.executable, str(python_examples / "client.py")]
    acp_agent_driver(
        [sys.executable, str(python_examples / "agent.py")], client=client,
        client_input=b"hello there\n",
    )  # fmt: skip


@pytest.mark.acp_cassette("python-sdk-hello", record_mode="none")
def test_a_changed_sdk_agent_fails(
    python_examples: Path, tmp_path: Path, acp_agent_driver: Callable[..., None]
) -> None:
    changed = tmp_path / "agent.py"
    text = (python_examples / "agent.py").read_text()
    changed.write_text(text.replace("Client sent:", "Client said:"))
    with pytest.raises(pytest.fail.Exception) as failure:
        acp_agent_driver([sys.executable, str(changed)])
    message = str(failure.value)
    assert "differs at $.params.update.content.text" in message
    assert '"text":"Client sent:"' in message
    assert '"text":"Client said:"' in message
