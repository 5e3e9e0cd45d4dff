"""``replay --to-agent`` (replay/drive.py, run by replay/shell/): the recorded client played."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_to_end

DRIFT = Path(__file__).resolve().parents[1] / "support" / "agents" / "drift_agent.py"
PROXY = [sys.executable, "-m", "acp_proxy"]


def run(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return run_to_end([*PROXY, *argv], timeout=timeout)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding one conversation: the demo client with the drift agent (same)."""
    db = tmp_path_factory.mktemp("drive") / "r.sqlite"
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", "hi", "--"]
    agent = [*PROXY, "record", "--db", str(db), "--", sys.executable, str(DRIFT), "same"]
    done = run_to_end([*client, *agent], text=False, timeout=30)
    assert done.returncode == 0, done.stderr
    return db


def drive(db: Path, mode: str, *options: str) -> subprocess.CompletedProcess[str]:
    agent = [sys.executable, str(DRIFT), mode]
    return run("replay", "--db", str(db), "--to-agent", *options, "1", "--", *agent)


def test_the_same_agent_matches(recorded: Path) -> None:
    done = drive(recorded, "same")
    assert done.returncode == 0, done.stderr
    assert "matched 4 of 4 agent frames. No divergence." in done.stderr


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("text", "differs at $.params.update.content.text"),
        ("missing", '  actual (normalized):             {"id":"#client-3"'),
        ("extra", '"method":"session/request_permission"'),
    ],
)
def test_a_changed_agent_diverges(recorded: Path, mode: str, expected: str) -> None:
    done = drive(recorded, mode)
    assert done.returncode == 1
    assert "The agent diverged at its frame 3 (recorded seq 6)" in done.stderr
    assert expected in done.stderr
    assert '  expected (recorded, normalized): {"jsonrpc":"2.0","method":"session/update"' in (
        done.stderr
    )


def test_ignore_leaves_out_a_path(recorded: Path) -> None:
    done = drive(recorded, "text", "--ignore", "$.params.update.content.text")
    assert done.returncode == 0, done.stderr


def test_an_agent_that_says_nothing_times_out(recorded: Path) -> None:
    agent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    done = run("replay", "--db", str(recorded), "--to-agent", "--timeout", "0.5", "1", "--", *agent)
    assert done.returncode == 1
    assert "timed out after 0.5s waiting for this frame from the agent" in done.stderr


def test_an_agent_that_exits_early_diverges(recorded: Path) -> None:
    agent = [sys.executable, "-c", "pass"]
    done = run("replay", "--db", str(recorded), "--to-agent", "1", "--", *agent)
    assert done.returncode == 1
    assert "the agent's output ended before this frame" in done.stderr


def test_record_keeps_the_run(tmp_path: Path, recorded: Path) -> None:
    db = tmp_path / "copy.sqlite"
    db.write_bytes(recorded.read_bytes())
    assert drive(db, "same", "--record").returncode == 0
    done = run("diff", "--db", str(db), "1", "last")
    assert done.returncode == 0, done.stdout + done.stderr


def test_usage_errors(recorded: Path) -> None:
    assert run("replay", "--db", str(recorded), "--to-agent", "1").returncode == 2
    done = run(
        "replay", "--db", str(recorded), "--to-agent", "--timing", "recorded", "1", "--", "x"
    )
    assert done.returncode == 2
    assert "do not apply to --to-agent" in done.stderr
    done = run("replay", "--db", str(recorded), "--to-agent", "1", "--", "/no/such/agent")
    assert done.returncode == 2
    assert "command not found" in done.stderr
