"""The pytest plugin (acp_proxy/pytest_plugin.py), run in pytester's scratch folders.

The inner runs use the installed plugin (entry point ``pytest11``), the demo client and the
drift agent (tests/support/agents/drift_agent.py), whose answers change with ``DRIFT_MODE``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_to_end

pytest_plugins = ["pytester"]
# Each test runs whole pytest sessions that record and replay real conversations, several in a
# row: longer than the suite's per-test default, bounded all the same.
pytestmark = pytest.mark.timeout(180)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tests" / "examples"
DRIFT = REPO / "tests" / "support" / "agents" / "drift_agent.py"

AGENT_TEST = f"""
import os, sys
import pytest

AGENT = [sys.executable, {str(DRIFT)!r}, os.environ.get("DRIFT_MODE", "same")]
CLIENT = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", "hi", "--"]


@pytest.mark.acp_cassette("drift")
def test_agent(acp_agent_driver):
    acp_agent_driver(AGENT, client=CLIENT, timeout=10)
"""

CLIENT_TEST = f"""
import os, subprocess, sys
import pytest

AGENT = [sys.executable, {str(DRIFT)!r}, "same"]


@pytest.mark.acp_cassette("client", agent=AGENT)
def test_client(acp_agent_command):
    prompt = os.environ.get("PROMPT", "hi")
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", prompt, "--"]
    subprocess.run([*client, *acp_agent_command], capture_output=True, timeout=30, check=False)
"""


EXAMPLE_FILES = ("test_client_example.py", "test_agent_example.py", "test_episodes_example.py")


def test_the_examples_run_unchanged(pytester: pytest.Pytester) -> None:
    for name in EXAMPLE_FILES:
        shutil.copy(EXAMPLES / name, pytester.path / name)
    shutil.copytree(EXAMPLES / "cassettes", pytester.path / "cassettes")
    recorded = (pytester.path / "cassettes" / "demo-episodes.jsonl").read_bytes()
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(passed=4)
    # The episodes example replays both of its conversations: nothing new is recorded.
    assert (pytester.path / "cassettes" / "demo-episodes.jsonl").read_bytes() == recorded


def test_the_docs_show_the_examples_as_they_are() -> None:
    docs = (REPO / "docs" / "testing.md").read_text()
    for name in EXAMPLE_FILES:
        assert (EXAMPLES / name).read_text() in docs, name


def test_mode_none_fails_without_a_cassette(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGENT_TEST)
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cassettes/drift.jsonl is missing and record mode is none*"])


def test_once_records_then_replays_and_names_the_divergence(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(AGENT_TEST)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # records
    cassette = pytester.path / "cassettes" / "drift.jsonl"
    assert cassette.read_text().startswith('{"format":"acp-proxy-jsonl"')
    recorded = cassette.read_bytes()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # replays
    assert cassette.read_bytes() == recorded
    expected = {
        "text": ['*expected (recorded*"text":"Hello"*', '*actual*"text":"Goodbye"*'],
        "missing": ["*expected (recorded*agent_message_chunk*", '*actual*"stopReason"*'],
        "extra": ["*expected (recorded*agent_message_chunk*", "*actual*request_permission*"],
    }
    for mode, lines in expected.items():
        monkeypatch.setenv("DRIFT_MODE", mode)
        result = pytester.runpytest_subprocess()
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*The agent diverged at its frame 3 (recorded seq 6)*", *lines]
        )
        if mode == "text":
            result.stdout.fnmatch_lines(["*differs at $.params.update.content.text"])


def test_mode_all_records_again(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGENT_TEST)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "drift.jsonl"
    first = cassette.read_bytes()
    pytester.runpytest_subprocess("--acp-record-mode=all").assert_outcomes(passed=1)
    assert cassette.read_bytes() != first  # a new recording: new uid and times


def test_a_client_that_diverges_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(CLIENT_TEST)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # records through the real agent
    assert (pytester.path / "cassettes" / "client.jsonl").is_file()
    pytester.runpytest_subprocess("--acp-record-mode=none").assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT", "something else")
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*the client diverged from*client.jsonl*", "*no recorded request matches*session/prompt*"]
    )


def test_a_cassette_imports_into_a_database(tmp_path: Path) -> None:
    cassette = EXAMPLES / "cassettes" / "demo-agent.jsonl"
    db = tmp_path / "r.sqlite"
    argv = [sys.executable, "-m", "acp_proxy", "import", "--db", str(db), str(cassette)]
    done = run_to_end(argv, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_failing_client_test_that_diverged_is_reported_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(CLIENT_TEST)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # records through the real agent
    pytester.makepyfile(CLIENT_TEST + "\n    assert False, 'the client test itself failed'\n")
    monkeypatch.setenv("PROMPT", "something else")
    result = pytester.runpytest_subprocess("--acp-record-mode=none")
    result.assert_outcomes(failed=1)  # no second report (ERROR) for the same test
    result.stdout.fnmatch_lines(
        [
            "*the client test itself failed*",
            "*acp-proxy replay*",
            "*the client diverged from*client.jsonl*",
        ]
    )
