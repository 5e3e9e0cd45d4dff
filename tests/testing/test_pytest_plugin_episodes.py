"""The pytest plugin's ``new_episodes`` record mode, on both fixtures (pytester runs).

The inner runs use the demo client and the drift agent (tests/support/agents/drift_agent.py): its
answers change with ``DRIFT_MODE`` and the session id it mints with ``DRIFT_SESSION``, so
episodes recorded in different runs hold different session ids, as real agents' do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_proxy.testing.cassette_episodes import split

pytest_plugins = ["pytester"]
# Each test runs whole pytest sessions that record and replay real conversations, several in a
# row: longer than the suite's per-test default, bounded all the same.
pytestmark = pytest.mark.timeout(180)

DRIFT = Path(__file__).resolve().parents[1] / "support" / "agents" / "drift_agent.py"

CLIENT_TEST = f"""
import os, subprocess, sys
import pytest

AGENT = [sys.executable, {str(DRIFT)!r}, os.environ.get("DRIFT_MODE", "same")]
if os.environ.get("NO_AGENT"):
    AGENT = ["/no/such/agent"]  # a replay that needs the real agent fails


@pytest.mark.acp_cassette("client", agent=AGENT)
def test_client(acp_agent_command):
    prompt = os.environ.get("PROMPT", "hi")
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", prompt, "--"]
    done = subprocess.run(
        [*client, *acp_agent_command], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Hello" in done.stdout
"""

AGENT_TEST = f"""
import os, sys
import pytest

AGENT = [sys.executable, {str(DRIFT)!r}, os.environ.get("DRIFT_MODE", "same")]
CLIENT = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt",
          os.environ.get("PROMPT", "hi"), "--"]


@pytest.mark.acp_cassette("agent")
def test_agent(acp_agent_driver):
    acp_agent_driver(AGENT, client=CLIENT, timeout=10)
"""

NEW = "--acp-record-mode=new_episodes"


def headers(cassette: Path) -> int:
    return len(split(cassette.read_bytes()))


def test_a_client_conversation_not_in_the_cassette_is_appended_then_replayed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(CLIENT_TEST)
    cassette = pytester.path / "cassettes" / "client.jsonl"
    monkeypatch.setenv("DRIFT_SESSION", "first-session")
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)  # missing: recorded as in once
    first = cassette.read_bytes()
    assert headers(cassette) == 1

    monkeypatch.setenv("DRIFT_SESSION", "second-session")
    monkeypatch.setenv("PROMPT", "bye")
    result = pytester.runpytest_subprocess(NEW)  # leaves episode 1 at the prompt: goes live
    result.assert_outcomes(passed=1)
    data = cassette.read_bytes()
    assert data.startswith(first)  # episode 1 kept byte for byte
    assert headers(cassette) == 2
    episode = split(data)[1]
    assert b'"text\\":\\"bye\\"' in episode  # the live conversation, as the agent saw it
    assert b"second-session" in episode  # the live agent's own session id

    monkeypatch.setenv("NO_AGENT", "1")  # both conversations now replay without the agent
    for prompt in ("bye", "hi"):
        monkeypatch.setenv("PROMPT", prompt)
        pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)
        pytester.runpytest_subprocess("--acp-record-mode=none").assert_outcomes(passed=1)
    assert cassette.read_bytes() == data  # a matching conversation appends nothing

    monkeypatch.setenv("PROMPT", "something else")  # in no episode: the client gets an error
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(failed=1)  # once: the replay's account is part of the failure
    result.stdout.fnmatch_lines(["*no recorded request matches this session/prompt*"])
    assert cassette.read_bytes() == data


def test_a_real_agent_that_does_not_reproduce_the_prefix_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(CLIENT_TEST)
    cassette = pytester.path / "cassettes" / "client.jsonl"
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)
    recorded = cassette.read_bytes()
    monkeypatch.setenv("DRIFT_MODE", "renamed")  # its initialize result changed since
    monkeypatch.setenv("PROMPT", "bye")
    result = pytester.runpytest_subprocess(NEW)
    result.assert_outcomes(failed=1)  # the client saw errors; the replay's account is added
    for line in (
        "*the real agent does not reproduce the recorded conversation*",
        "*The agent diverged at its frame 1*differs at $.result.agentInfo",
        '*actual (normalized):*"agentInfo":{"name":"drift","version":"2"}*',
        '*re-record the cassette with record_mode="all"*',
    ):
        result.stdout.fnmatch_lines([line])
    assert cassette.read_bytes() == recorded


def test_new_episodes_without_a_real_agent_fails_on_a_new_conversation(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(CLIENT_TEST)
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)  # recorded with the agent
    pytester.makepyfile(CLIENT_TEST.replace(", agent=AGENT", ""))  # now without one
    monkeypatch.setenv("PROMPT", "bye")
    result = pytester.runpytest_subprocess(NEW)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*only when a real agent is given*"])


def test_an_agent_conversation_not_in_the_cassette_is_appended(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(AGENT_TEST)
    cassette = pytester.path / "cassettes" / "agent.jsonl"
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)  # missing: recorded
    first = cassette.read_bytes()
    assert headers(cassette) == 1
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)  # repeats episode 1
    assert cassette.read_bytes() == first

    monkeypatch.setenv("PROMPT", "bye")
    monkeypatch.setenv("DRIFT_SESSION", "other")
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)
    data = cassette.read_bytes()
    assert data.startswith(first)
    assert headers(cassette) == 2
    pytester.runpytest_subprocess(NEW).assert_outcomes(passed=1)  # now it repeats episode 2
    assert cassette.read_bytes() == data

    pytester.runpytest_subprocess("--acp-record-mode=none").assert_outcomes(passed=1)
    monkeypatch.setenv("DRIFT_MODE", "text")
    for mode in ("none", "new_episodes"):  # every episode is driven; the first diverges
        result = pytester.runpytest_subprocess(f"--acp-record-mode={mode}")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*replay --to-agent of episode 1 of 2*differs at $.params.update.content.text"]
        )
    assert cassette.read_bytes() == data
