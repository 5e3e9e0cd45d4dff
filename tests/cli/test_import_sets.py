"""Each command imports what it needs and no more: start-up time is mostly imports.

Every command runs in a child interpreter, as a user runs it, and the names in
``sys.modules`` at its exit are compared with what it must not load: the command-line library
for ``--version``; for the reading commands, the other commands' code (check, replay, share,
the servers), the forwarding code, zip files and temporary folders, and anything async.
The figures of what this saves are in docs/performance.md (tests/perf/bench_startup.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import C2A, write_recording
from tests.support.processes import run_to_end

AGENT = Path(__file__).parents[1] / "support" / "agents" / "fake_agent.py"
SNAPSHOT = (
    "import atexit, sys\n"
    "def _dump():\n"
    "    names = sorted(sys.modules)\n"
    "    with open(sys.argv.pop(1), 'w') as out:\n"
    "        out.write('\\n'.join(names))\n"
    "atexit.register(_dump)\n"
    "from acp_proxy.cli.entry import main\n"
    "main(sys.argv[2:])\n"
)
ASYNC = {"anyio", "asyncio", "uvicorn", "starlette", "mcp"}
OTHER_COMMANDS = {"acp_proxy.check", "acp_proxy.replay", "acp_proxy.share", "acp_proxy.serve",
                  "acp_proxy.testing", "acp_proxy.otel", "acp_proxy.editors", "acp_proxy.demo",
                  "jsonschema_rs", "sqlite_utils"}  # fmt: skip
FORWARDING = {"acp_proxy.record.spawn", "acp_proxy.record.tap", "acp_proxy.record.forward"}
FILES = {"zipfile", "tempfile", "shutil", "lzma", "bz2"}
READING_ALONE = ASYNC | OTHER_COMMANDS | FORWARDING | FILES | {"subprocess"}


def imported(tmp_path: Path, *args: str, given: bytes = b"") -> set[str]:
    out = tmp_path / "modules.txt"
    done = run_to_end(
        [sys.executable, "-c", SNAPSHOT, str(out), *args], text=False, timeout=60, input=given
    )
    assert done.returncode == 0, done.stderr
    return set(out.read_text().split("\n"))


def loaded(modules: set[str], families: set[str]) -> list[str]:
    return sorted(m for m in modules if m in families or m.rsplit(".", 1)[0] in families
                  or any(m.startswith(f"{f}.") for f in families))  # fmt: skip


def test_version_loads_neither_click_nor_the_proxy(tmp_path: Path) -> None:
    modules = imported(tmp_path, "--version")
    assert loaded(modules, {"click", "subprocess", "threading", "sqlite3", "orjson"}) == []
    assert sorted(m for m in modules if m.startswith("acp_proxy")) == [
        "acp_proxy", "acp_proxy.cli", "acp_proxy.cli.entry", "acp_proxy.paths",
        "acp_proxy.record", "acp_proxy.record.defaults", "acp_proxy.stderr",
    ]  # fmt: skip


def test_help_loads_no_command_module(tmp_path: Path) -> None:
    modules = imported(tmp_path, "--help")
    everything_but_click_s_own = READING_ALONE - FILES - {"subprocess"}
    assert (
        loaded(modules, everything_but_click_s_own | {"acp_proxy.store", "acp_proxy.inspect"}) == []
    )


@pytest.mark.parametrize(
    "command", [["ls"], ["show"], ["show", "1", "--json"], ["tail"], ["stats"]], ids=" ".join
)
def test_reading_commands_load_only_reading_code(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "rec.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    modules = imported(tmp_path, *command, "--db", str(db))
    assert loaded(modules, READING_ALONE) == []
    if command[0] != "stats":
        assert loaded(modules, {"acp_proxy.inspect.transcript"}) == []


def test_replay_loads_no_other_command(tmp_path: Path) -> None:
    db = tmp_path / "rec.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    client = b"".join(raw for direction, raw in V1_CONVERSATION if direction is C2A)
    modules = imported(tmp_path, "replay", "--db", str(db), "1", given=client)
    spawning = {"acp_proxy.record.spawn"}  # going live starts an agent
    assert (
        loaded(modules, OTHER_COMMANDS - {"acp_proxy.replay"} | FORWARDING - spawning | FILES) == []
    )


def test_record_runs_without_click(tmp_path: Path) -> None:
    db = tmp_path / "rec.sqlite"
    modules = imported(tmp_path, "record", "--db", str(db), "--", sys.executable, str(AGENT),
                       "echo")  # fmt: skip
    assert loaded(modules, {"click"} | ASYNC | OTHER_COMMANDS) == []


def test_plain_replay_runs_without_click_or_an_event_loop(tmp_path: Path) -> None:
    db = tmp_path / "rec.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    client = b"".join(raw for direction, raw in V1_CONVERSATION if direction is C2A)
    shell = {"acp_proxy.replay.shell.loop", "acp_proxy.replay.shell.ports"}
    modules = imported(tmp_path, "replay", "--db", str(db), "1", given=client)
    assert loaded(modules, {"click"} | ASYNC | shell) == []
    # Through the command line (an option the early form does not read): still no event loop.
    modules = imported(tmp_path, "replay", "--timing", "x2", "--db", str(db), "1", given=client)
    assert loaded(modules, ASYNC | shell) == []
    assert "click" in modules


def test_a_replay_that_matches_loads_only_what_it_answers_with(tmp_path: Path) -> None:
    """No reader of other commands and no comparer: a mismatch imports the comparer when it
    describes one, the readers belong to show, check and the inspector."""
    db = tmp_path / "rec.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    client = b"".join(raw for direction, raw in V1_CONVERSATION if direction is C2A)
    modules = imported(tmp_path, "replay", "--db", str(db), "1", given=client)
    not_needed = {"acp_proxy.protocol.diffing", "acp_proxy.protocol.observer",
                  "acp_proxy.protocol.latency", "acp_proxy.protocol.transport",
                  "acp_proxy.store.values", "acp_proxy.store.readers", "acp_proxy.store.frames",
                  "acp_proxy.store.remote", "acp_proxy.store.transport_facts"}  # fmt: skip
    assert sorted(modules & not_needed) == []
