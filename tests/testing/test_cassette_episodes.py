"""Files of several episodes (JSONL exports one after the other): split, import, and the
commands that take them (``import``, ``check``, ``show``, ``replay``, ``replay --to-agent``).

The episodes are real runs: the demo client with the drift agent
(tests/support/agents/drift_agent.py)
through ``acp-proxy record``, one prompt each.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from acp_proxy.store.importer import ImportRefused, import_jsonl
from acp_proxy.testing.cassette_episodes import repeats, split
from tests.support.processes import run_to_end

DRIFT = Path(__file__).resolve().parents[1] / "support" / "agents" / "drift_agent.py"
PROXY = [sys.executable, "-m", "acp_proxy"]


def run(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return run_to_end([*PROXY, *argv], text=False, input=stdin, timeout=60)


def client(prompt: str) -> list[str]:
    return [sys.executable, "-m", "acp_proxy.demo.client", "--prompt", prompt, "--"]


def record(db: Path, prompt: str, mode: str = "same") -> bytes:
    """One conversation recorded into ``db``; returns its JSONL export."""
    agent = [*PROXY, "record", "--db", str(db), "--", sys.executable, str(DRIFT), mode]
    done = run_to_end([*client(prompt), *agent], text=False, timeout=60)
    assert done.returncode == 0, done.stderr
    exported = run("export", "--db", str(db), "--format", "jsonl", "last")
    assert exported.returncode == 0, exported.stderr
    return exported.stdout


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Three exports: prompt "hi"; prompt "bye"; prompt "hi" again with the agent saying
    "Goodbye" (mode ``text``)."""
    db = tmp_path_factory.mktemp("episodes") / "r.sqlite"
    return [record(db, "hi"), record(db, "bye"), record(db, "hi", "text")]


@pytest.fixture
def two(tmp_path: Path, episodes: list[bytes]) -> Path:
    path = tmp_path / "two.jsonl"
    path.write_bytes(episodes[0] + episodes[1])
    return path


def connections(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db) as con:
        query = "SELECT connection_id, count(*) FROM frame GROUP BY connection_id ORDER BY 1"
        return [(int(a), int(b)) for a, b in con.execute(query)]


def test_split_keeps_each_episode_byte_for_byte(episodes: list[bytes]) -> None:
    assert split(episodes[0]) == [episodes[0]]
    assert split(b"".join(episodes)) == episodes
    assert split(b"") == []


def test_every_episode_is_imported_in_one_transaction(
    tmp_path: Path, episodes: list[bytes]
) -> None:
    db = tmp_path / "i.sqlite"
    ids = import_jsonl(db, (episodes[0] + episodes[1]).splitlines(keepends=True))
    assert ids == [1, 2]
    frames = len(episodes[0].splitlines()) - 1
    assert connections(db) == [(1, frames), (2, len(episodes[1].splitlines()) - 1)]
    broken = episodes[2].replace(b'"seq":3,', b'"seq":"three",', 1) + b"{not json\n"
    with pytest.raises(ImportRefused):
        import_jsonl(tmp_path / "b.sqlite", (episodes[2] + broken).splitlines(keepends=True))
    assert connections(tmp_path / "b.sqlite") == []  # the good first episode was rolled back too
    with pytest.raises(ImportRefused, match="already in this database"):
        import_jsonl(tmp_path / "d.sqlite", (episodes[2] * 2).splitlines(keepends=True))


def test_the_commands_take_a_file_of_episodes(tmp_path: Path, two: Path) -> None:
    db = tmp_path / "c.sqlite"
    done = run("import", "--db", str(db), str(two))
    assert done.returncode == 0, done.stderr
    assert b"as connections 1, 2 (2 episodes)" in done.stdout
    done = run("check", "--db", str(db), str(two))
    assert b"2 connections," in done.stdout, done.stdout
    done = run("show", str(two))
    assert done.returncode == 0
    assert b"holds 2 episodes; this is episode 1" in done.stderr
    assert b'"text":"hi"' in done.stdout


def test_replay_to_agent_drives_every_episode(
    tmp_path: Path, two: Path, episodes: list[bytes]
) -> None:
    agent = [sys.executable, str(DRIFT), "same"]
    done = run("replay", "--to-agent", str(two), "--", *agent)
    assert done.returncode == 0, done.stderr
    assert b"episode 1 of 2" in done.stderr
    assert b"episode 2 of 2 (connection 2): sent 3 client frames, matched 4 of 4" in done.stderr
    drifted = tmp_path / "drifted.jsonl"
    drifted.write_bytes(episodes[0] + episodes[2])  # episode 2 expects "Goodbye"
    done = run("replay", "--to-agent", str(drifted), "--", *agent)
    assert done.returncode == 1
    assert b"episode 2 of 2" in done.stderr
    assert b"differs at $.params.update.content.text" in done.stderr


def test_replay_follows_the_episode_the_client_lives(two: Path) -> None:
    for prompt, episode in (("hi", b"episode 1:"), ("bye", b"episode 1 then 2:")):
        replay = [*PROXY, "replay", str(two)]
        done = run_to_end([*client(prompt), *replay], text=False, timeout=60)
        assert done.returncode == 0, done.stderr
        assert episode in done.stderr
    done = run("replay", "--session", "s-1", str(two))
    assert done.returncode == 2
    assert b"--session needs a recording of a single episode" in done.stderr


def test_go_live_needs_an_agent(two: Path) -> None:
    done = run("replay", "--go-live", str(two))
    assert done.returncode == 2
    assert b"--go-live needs the agent command after --" in done.stderr


def test_repeats_compares_client_sides_as_diff_does(episodes: list[bytes]) -> None:
    elsewhere = episodes[0].replace(b'"cwd\\":\\"', b'"cwd\\":\\"/elsewhere')
    assert elsewhere != episodes[0]
    found = repeats(elsewhere, [episodes[1], episodes[0]])  # the cwd does not count
    assert found is not None
    assert found.episode == 1
    assert found.diff.equal
    found = repeats(episodes[2], [episodes[1], episodes[0]])  # same client, other answer
    assert found is not None
    assert found.episode == 1
    assert not found.diff.equal
    assert repeats(episodes[1], [episodes[0], episodes[2]]) is None


def test_go_live_with_an_agent_that_cannot_start_fails(tmp_path: Path, two: Path) -> None:
    replay = [*PROXY, "replay", str(two), "--go-live", "--", "/no/such/agent"]
    done = run_to_end([*client("something new"), *replay], text=False, timeout=60)
    assert done.returncode == 1
    assert b"the real agent could not take over: cannot run '/no/such/agent'" in done.stderr
    assert b"command not found" in done.stderr
