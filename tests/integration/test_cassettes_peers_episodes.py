"""Record mode ``new_episodes`` with the official Python SDK's example client and agent.

The cassette ``cassettes/python-sdk-hello.jsonl`` (the client saying "hello there" to the
agent) is copied into a pytester folder; the client then says something else: the replay
follows the recorded episode up to the prompt, catches the real SDK agent up and goes on live,
and the new conversation is appended as episode 2, which then replays without the agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acp_proxy.testing.cassette_episodes import split

pytestmark = [pytest.mark.peers, pytest.mark.timeout(180)]  # several recorded runs in a row
pytest_plugins = ["pytester"]

CASSETTE = Path(__file__).resolve().parent / "cassettes" / "python-sdk-hello.jsonl"

INNER = """
import os, subprocess, sys
import pytest

EXAMPLES = {examples!r}


@pytest.fixture
def acp_real_agent():
    if os.environ.get("NO_AGENT"):
        return ["/no/such/agent"]
    return [sys.executable, os.path.join(EXAMPLES, "agent.py")]


@pytest.mark.acp_cassette("python-sdk-hello")
def test_sdk_client(acp_agent_command):
    line = os.environ["SAY"]
    client = [sys.executable, os.path.join(EXAMPLES, "client.py"), *acp_agent_command]
    done = subprocess.run(
        client, input=line + "\\n", capture_output=True, text=True, timeout=30, check=False
    )
    assert "| Agent: " + line in done.stdout, done.stderr
"""


def test_a_new_sdk_conversation_is_appended_and_replayed(
    pytester: pytest.Pytester, python_examples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(INNER.format(examples=str(python_examples)))
    cassette = pytester.path / "cassettes" / "python-sdk-hello.jsonl"
    cassette.parent.mkdir()
    shutil.copy(CASSETTE, cassette)
    recorded = cassette.read_bytes()

    monkeypatch.setenv("SAY", "goodbye now")
    pytester.runpytest_subprocess("--acp-record-mode=new_episodes").assert_outcomes(passed=1)
    episodes = split(cassette.read_bytes())
    assert episodes[0] == recorded
    assert len(episodes) == 2
    assert b"goodbye now" in episodes[1]

    monkeypatch.setenv("NO_AGENT", "1")
    for say in ("goodbye now", "hello there"):
        monkeypatch.setenv("SAY", say)
        result = pytester.runpytest_subprocess("--acp-record-mode=none")
        result.assert_outcomes(passed=1)
    assert len(split(cassette.read_bytes())) == 2
