"""wrap/unwrap on sample settings files: only command and args change, and back again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from acp_proxy.editors.jsonc import JsoncError, parse
from acp_proxy.editors.wiring import WiringError, command_by_name, unwrap, wrap

SAMPLES = Path(__file__).parent / "settings"
PROXY = "/opt/acp/bin/acp-proxy"


def _strict(text: str) -> object:
    """The sample as strict JSON, comments and trailing commas removed by our reader."""
    return parse(text).value


def test_jsonc_reader_takes_comments_and_trailing_commas() -> None:
    value = parse('// c\n{"a": [1, 2,], /* x */ "b": {"c": "d//e",},}').value
    assert value == {"a": [1, 2], "b": {"c": "d//e"}}
    with pytest.raises(JsoncError, match="line 2"):
        parse('{"a": 1,\n "b" 2}')


def test_wrap_changes_only_command_and_args_of_one_entry() -> None:
    text = (SAMPLES / "zed.json").read_text()
    changed = wrap(text, "Gemini CLI", PROXY)
    entry = _strict(changed.text)["agent_servers"]["Gemini CLI"]  # type: ignore[index]
    assert entry["command"] == PROXY
    assert entry["args"] == ["record", "--label", "Gemini CLI", "--", "/usr/local/bin/gemini",
                             "--experimental-acp"]  # fmt: skip
    assert changed.entry == entry
    assert "// the user's theme" in changed.text
    assert "/* agents */" in changed.text
    new_args = json.dumps(entry["args"], separators=(",", ":"))
    put_back = changed.text.replace(json.dumps(PROXY), '"/usr/local/bin/gemini"', 1)
    assert put_back.replace(new_args, '["--experimental-acp"]', 1) == text  # nothing else moved
    assert unwrap(changed.text, "Gemini CLI").text == text


def test_wrap_adds_args_when_there_were_none_and_keeps_the_database() -> None:
    text = (SAMPLES / "zed.json").read_text()
    changed = wrap(text, "OpenCode", PROXY, db="/tmp/x.sqlite")
    entry = _strict(changed.text)["agent_servers"]["OpenCode"]  # type: ignore[index]
    assert entry["args"] == ["record", "--db", "/tmp/x.sqlite", "--label", "OpenCode", "--",
                             "opencode"]  # fmt: skip
    back = _strict(unwrap(changed.text, "OpenCode").text)
    assert back["agent_servers"]["OpenCode"] == {"command": "opencode", "args": []}  # type: ignore[index]


def test_refusals_are_one_line() -> None:
    text = (SAMPLES / "zed.json").read_text()
    with pytest.raises(WiringError, match="no agent 'Nope' in agent_servers"):
        wrap(text, "Nope", PROXY)
    with pytest.raises(WiringError, match="built-in agent"):
        wrap(text, "claude-code", PROXY)
    with pytest.raises(WiringError, match="already runs through acp-proxy"):
        wrap(wrap(text, "Goose", PROXY).text, "Goose", PROXY)
    with pytest.raises(WiringError, match="does not run through acp-proxy"):
        unwrap(text, "Goose")
    with pytest.raises(WiringError, match="not JSON"):
        wrap("{", "Goose", PROXY)


def test_cli_prints_without_write_and_writes_with_a_backup(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / "acp.json"
    shutil.copy(SAMPLES / "acp.json", settings)
    os.chmod(settings, 0o600)
    original = settings.read_text()
    args = ["wrap", "--jetbrains", "Codex", "--settings", str(settings)]
    shown = CliRunner().invoke(cli, args)
    assert shown.exit_code == 0, shown.output
    entry = json.loads(shown.stdout)
    assert entry["args"][-2:] == ["--", "/home/u/.npm-global/bin/codex-acp"]
    assert Path(entry["command"]).is_absolute()
    assert settings.read_text() == original
    written = CliRunner().invoke(cli, [*args, "--write"])
    assert written.exit_code == 0
    assert "changed " in capfd.readouterr().err
    assert (tmp_path / "acp.json.acp-proxy.bak").read_text() == original
    assert json.loads(settings.read_text())["agent_servers"]["Codex"]["env"] == {"RUST_LOG": "info"}
    assert settings.stat().st_mode & 0o777 == 0o600
    back = ["unwrap", "--jetbrains", "Codex", "--settings", str(settings), "--write"]
    assert CliRunner().invoke(cli, back).exit_code == 0
    assert json.loads(settings.read_text()) == json.loads(original)
    again = CliRunner().invoke(cli, back)
    assert again.exit_code == 2
    assert "does not run through acp-proxy" in capfd.readouterr().err
    assert CliRunner().invoke(cli, ["wrap", "Codex", "--settings", str(settings)]).exit_code == 2


def test_no_backup_is_ever_overwritten(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "acp.json"
    shutil.copy(SAMPLES / "acp.json", settings)
    os.chmod(settings, 0o600)
    original = settings.read_text()
    where = ["--jetbrains", "--settings", str(settings), "--write"]
    first = tmp_path / "acp.json.acp-proxy.bak"

    def run(*args: str) -> str:
        done = CliRunner().invoke(cli, [*args, *where])
        assert done.exit_code == 0, done.output
        return capfd.readouterr().err

    assert f"the old file is kept as {first})" in run("wrap", "Codex")
    settings.write_text(settings.read_text().replace('"info"', '"debug"'))  # the user edits it
    edited = settings.read_text()
    said = run("unwrap", "Codex")
    second = tmp_path / "acp.json.acp-proxy.bak.2"
    assert f"the old file is kept as {second}; before acp-proxy first changed it: {first}" in said
    run("wrap", "Codex")
    assert first.read_text() == original  # the file before acp-proxy ever touched it
    assert second.read_text() == edited
    assert (tmp_path / "acp.json.acp-proxy.bak.3").exists()
    assert {p.stat().st_mode & 0o777 for p in tmp_path.glob("acp.json.acp-proxy.bak*")} == {0o600}
    said = run("unwrap", "Codex")  # the wrapped file is kept already: no copy of it
    assert "the old file is already kept as " in said
    assert sorted(p.name for p in tmp_path.glob("acp.json.acp-proxy.bak*")) == [
        "acp.json.acp-proxy.bak", "acp.json.acp-proxy.bak.2", "acp.json.acp-proxy.bak.3"
    ]  # fmt: skip


def test_an_agent_run_by_name_is_warned_of_not_rewritten(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "settings.json"
    shutil.copy(SAMPLES / "zed.json", settings)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "opencode").write_text("#!/bin/sh\n")
    (bin_dir / "opencode").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    shown = CliRunner().invoke(cli, ["wrap", "--zed", "OpenCode", "--settings", str(settings)])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["args"][-1] == "opencode"  # kept as written
    said = capfd.readouterr().err
    assert said.count("\n") == 1
    assert "warning: agent 'OpenCode' runs 'opencode' by name" in said
    assert f"here it is {bin_dir / 'opencode'}" in said
    assert "the absolute-path pitfall" in said
    absolute = ["wrap", "--zed", "Gemini CLI", "--settings", str(settings)]
    assert CliRunner().invoke(cli, absolute).exit_code == 0
    assert "warning" not in capfd.readouterr().err


def test_which_commands_are_found_by_name() -> None:
    assert command_by_name({"command": "npx", "args": ["-y", "x"]}) == "npx"
    assert command_by_name({"command": "./agent"}) == "./agent"
    assert command_by_name({"command": "/usr/bin/gemini"}) is None
    assert command_by_name({"command": "gemini", "env": {"PATH": "/opt/bin"}}) is None
