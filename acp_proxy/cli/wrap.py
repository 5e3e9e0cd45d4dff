"""``wrap`` and ``unwrap``: an editor's agent entry through ``acp-proxy record`` and back.

Rules:
- Without ``--write`` nothing is changed: the new entry is printed, ready to paste.
- With ``--write`` the file is replaced atomically after its old text is kept beside it
  (``FILE.acp-proxy.bak``), and only the entry's ``command`` and ``args`` differ.
- The proxy is named by its absolute path: GUI editors started from a desktop do not have the
  shell's PATH.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from acp_proxy.stderr import report

if TYPE_CHECKING:
    from acp_proxy.editors.wiring import Changed

BACKUP_SUFFIX = ".acp-proxy.bak"


def default_settings(editor: str) -> Path:
    home = Path.home()
    if editor == "jetbrains":
        return home / ".jetbrains" / "acp.json"
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "zed" / "settings.json"


def proxy_path() -> str:
    """The absolute path of the ``acp-proxy`` program the editor should run."""
    found = shutil.which("acp-proxy")
    if found:
        return str(Path(found).resolve())
    beside = Path(sys.executable).parent / "acp-proxy"
    return str(beside if beside.exists() else Path(sys.argv[0]).resolve())


F = TypeVar("F", bound=Callable[..., Any])


def _editor_options(function: F) -> F:
    options = [
        click.option("--zed", "editor", flag_value="zed",
                     help="Zed: agent_servers in settings.json."),
        click.option("--jetbrains", "editor", flag_value="jetbrains",
                     help="JetBrains IDEs: agent_servers in ~/.jetbrains/acp.json."),
        click.option("--settings", type=click.Path(dir_okay=False, path_type=Path),
                     help="The settings file [default: the editor's own]."),
        click.option("--write", is_flag=True,
                     help=f"Change the file in place (the old one kept as FILE{BACKUP_SUFFIX})."),
    ]  # fmt: skip
    for option in reversed(options):
        function = option(function)
    return function


def _apply(
    editor: str | None, settings: Path | None, write: bool, change: Callable[[str], Changed]
) -> None:
    from acp_proxy.editors.wiring import WiringError

    if editor is None:
        raise click.UsageError("say which editor: --zed or --jetbrains")
    path = settings or default_settings(editor)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        report(f"cannot read {path}: {error.strerror or error}")
        sys.exit(2)
    try:
        changed = change(text)
    except WiringError as error:
        report(f"{path}: {error}")
        sys.exit(2)
    if not write:
        click.echo(orjson.dumps(changed.entry, option=orjson.OPT_INDENT_2).decode())
        return
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    shutil.copy2(path, backup)
    scratch = path.with_name(f".{path.name}.acp-proxy-new")
    scratch.write_text(changed.text, encoding="utf-8")
    shutil.copymode(path, scratch)
    os.replace(scratch, path)
    report(f"changed {path} (the old file is {backup}); restart the agent in the editor")


@click.command("wrap")
@click.argument("name")
@_editor_options
@click.option("--db", help="Record into this database (`record --db`) instead of the default.")
def wrap_command(
    name: str, editor: str | None, settings: Path | None, write: bool, db: str | None
) -> None:
    """Put `acp-proxy record` in front of agent NAME of an editor's settings.

    NAME is a key of agent_servers that has a command. The command becomes the proxy's
    absolute path and the args `record --label NAME -- OLD COMMAND...`; comments and the rest
    of the file stay as they were. Without --write the new entry is printed.

        acp-proxy wrap --zed "Gemini CLI" --write
    """
    from acp_proxy.editors.wiring import wrap

    _apply(editor, settings, write, lambda text: wrap(text, name, proxy_path(), db=db))


@click.command("unwrap")
@click.argument("name")
@_editor_options
def unwrap_command(name: str, editor: str | None, settings: Path | None, write: bool) -> None:
    """Undo `wrap`: agent NAME runs its own command again, without the proxy."""
    from acp_proxy.editors.wiring import unwrap

    _apply(editor, settings, write, lambda text: unwrap(text, name))
