"""The help's map: every command in one section with a whole-sentence summary, nothing cut.

Rendered at 80 columns, the width of the terminal a new user most likely has.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.helptext import SECTIONS
from acp_proxy.cli.main import LAZY_COMMANDS, main
from acp_proxy.paths import default_db_path

MAPPED = [name for _, commands in SECTIONS for name, _ in commands]


def _help(*args: str) -> str:
    done = CliRunner().invoke(main, [*args, "--help"], terminal_width=80)
    assert done.exit_code == 0, done.output
    return done.output


def test_every_command_is_in_exactly_one_section() -> None:
    commands = set(main.commands) | set(LAZY_COMMANDS)
    assert sorted(MAPPED) == sorted(commands)
    assert len(MAPPED) == len(set(MAPPED))
    assert MAPPED[0] == "record"


def test_the_map_fits_80_columns_with_summaries_that_end() -> None:
    shown = _help()
    assert max(len(line) for line in shown.splitlines()) <= 80
    assert "..." not in shown.replace("COMMAND [ARGS]...", "")  # no summary was cut
    for title, commands in SECTIONS:
        assert f"\n{title}:\n" in shown
        for name, summary in commands:
            assert summary.endswith("."), name
            assert re.search(rf"^  {re.escape(name)} +{re.escape(summary)}$", shown, re.M), name
    assert "Examples:\n  acp-proxy record -- " in shown


@pytest.mark.parametrize("command", sorted(set(MAPPED)))
def test_help_never_breaks_a_word_at_a_hyphen(command: str) -> None:
    shown = _help(command)
    assert max(len(line) for line in shown.splitlines()) <= 80
    if "--db FILE" in shown:
        home = str(Path.home())
        assert str(default_db_path()).replace(home, "~", 1) in shown  # whole: it can be copied
    assert not re.search(r"[a-z]-\n", shown)  # no word was broken after a hyphen
