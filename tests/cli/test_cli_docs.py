"""docs/cli.md is the rendered help of every command, and that rendering is reproducible.

The expected text is always rendered afresh from the CLI (never a snapshot kept here), so a new
command only needs `python -m acp_proxy.cli.doc` to be run, not a change to these tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from acp_proxy.cli import doc as clidoc
from acp_proxy.cli.main import main as cli
from tests.support.processes import run_to_end

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cli.md"
REGENERATE = "run `python -m acp_proxy.cli.doc` (from the repository root) to regenerate it"


@pytest.fixture(scope="module")
def rendered() -> str:
    return clidoc.render()


def read_raw(path: Path) -> str:
    with path.open(encoding="utf-8", newline="") as file:
        return file.read()


def commands(
    command: click.Command, ctx: click.Context, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path)} lists {name!r} but cannot get it"
            if not sub.hidden:
                yield from commands(
                    sub, click.Context(sub, info_name=name, parent=ctx), (*path, name)
                )


def all_commands() -> list[tuple[tuple[str, ...], click.Command]]:
    return list(commands(cli, click.Context(cli, info_name="acp-proxy"), ("acp-proxy",)))


def test_docs_are_up_to_date(rendered: str) -> None:
    assert DOC.is_file(), f"{DOC.relative_to(REPO)} is missing: {REGENERATE}"
    assert read_raw(DOC) == rendered, f"{DOC.relative_to(REPO)} is out of date: {REGENERATE}"


def test_every_command_has_help() -> None:
    missing = [
        " ".join(path) for path, command in all_commands() if not (command.help or "").strip()
    ]
    assert not missing, f"commands without a docstring or help=: {missing}"


def test_every_command_has_its_section_in_the_help_s_order(rendered: str) -> None:
    headings = [line[3:] for line in rendered.splitlines() if line.startswith("## ")]
    expected = [" ".join(path) for path, _ in all_commands()]
    assert headings[0] == "acp-proxy"
    assert headings[1] == "acp-proxy record"  # the map's order, not the alphabet's
    assert headings == expected


def test_sections_are_the_help_at_100_columns(rendered: str) -> None:
    # The top-level help has no home-dependent default: its section is exactly `--help`.
    result = CliRunner().invoke(cli, ["--help"], prog_name="acp-proxy", terminal_width=100)
    assert result.exit_code == 0
    assert f"## acp-proxy\n\n```text\n{result.output}```\n" in rendered


def test_render_is_independent_of_home_and_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    texts = []
    for name in ("first-home", "second-home-with-a-much-longer-name"):
        home = tmp_path / name
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
        monkeypatch.setenv("ACP_PROXY_DB", str(home / "db.sqlite"))
        texts.append(clidoc.render())
    assert texts[0] == texts[1]
    assert str(tmp_path) not in texts[0]
    assert "$XDG_DATA_HOME/" in texts[0]  # the --db default, as a placeholder
    home = str(Path.home())
    if len(home) > 1:
        assert home not in texts[0]


def test_check_passes_on_a_fresh_file_and_fails_on_a_stale_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "docs" / "cli.md"
    assert clidoc.main([str(target)]) == 0
    assert read_raw(target) == clidoc.render()
    assert clidoc.main(["--check", str(target)]) == 0
    assert capsys.readouterr().err == ""

    target.write_text(read_raw(target) + "edited by hand\n", encoding="utf-8")
    assert clidoc.main(["--check", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "out of date" in err
    assert "python -m acp_proxy.cli.doc" in err


def test_module_entry_point_check_exit_status(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.md"
    result = run_to_end(
        [sys.executable, "-m", "acp_proxy.cli.doc", "--check", str(missing)], timeout=60
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert str(missing) in result.stderr
    assert not missing.exists()
