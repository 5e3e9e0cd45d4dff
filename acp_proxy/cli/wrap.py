"""``wrap`` and ``unwrap``: an editor's agent entry through ``acp-proxy record`` and back.

Rules:
- Without ``--write`` nothing is changed: the new entry is printed, ready to paste.
- With ``--write`` the file is replaced atomically after its old text is kept beside it, and
  only the entry's ``command`` and ``args`` differ. No backup is ever overwritten: the first,
  ``FILE.acp-proxy.bak``, is the file before acp-proxy first changed it; later ones are
  numbered (``.acp-proxy.bak.2`` ...), and none is made when one already holds the same bytes.
  Where the old file went is said on stderr.
- An agent command the editor must find by name gets a warning on stderr (the absolute-path
  pitfall), never a rewrite: see ``warn_if_found_by_name``.
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
                     help=f"Change the file in place; the old one is kept as FILE{BACKUP_SUFFIX} "
                          f"(FILE{BACKUP_SUFFIX}.2 and so on when that exists)."),
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
    kept, fresh = keep_backup(path)
    scratch = path.with_name(f".{path.name}.acp-proxy-new")
    scratch.write_text(changed.text, encoding="utf-8")
    shutil.copymode(path, scratch)
    os.replace(scratch, path)
    first = backup_path(path)
    where = f"the old file is {'kept' if fresh else 'already kept'} as {kept}"
    if kept != first:
        where += f"; before acp-proxy first changed it: {first}"
    report(f"changed {path} ({where}); restart the agent in the editor")


def backup_path(path: Path, number: int = 1) -> Path:
    """``FILE.acp-proxy.bak`` (the first backup), then ``FILE.acp-proxy.bak.2``, ``.3`` ..."""
    suffix = BACKUP_SUFFIX if number == 1 else f"{BACKUP_SUFFIX}.{number}"
    return path.with_name(path.name + suffix)


def keep_backup(path: Path) -> tuple[Path, bool]:
    """Keep ``path`` as it is now under the next free backup name, never over an earlier one.

    The first backup is the file as it was before acp-proxy first changed it. When an earlier
    backup holds these very bytes (wrap, unwrap, wrap: the original is back), that one is
    named instead: ``(backup, False)``. The copy has the file's permissions from its first
    byte (settings may hold secrets).
    """
    content = path.read_bytes()
    number = 1
    while (candidate := backup_path(path, number)).exists():
        if candidate.read_bytes() == content:
            return candidate, False
        number += 1
    mode = path.stat().st_mode & 0o777
    while True:
        candidate = backup_path(path, number)
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:  # another wrap took this number just now
            number += 1
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        shutil.copystat(path, candidate)
        return candidate, True


def warn_if_found_by_name(name: str, command: str | None) -> None:
    """Warn of the absolute-path pitfall (docs/editors.md) for an agent run by its name.

    A warning, not a rewrite: the path found here is this shell's (a version manager's shim,
    a virtualenv), a script found there may still need its interpreter on the editor's PATH
    (``npx`` needs ``node``), and unwrap gives back exactly what the user wrote.
    """
    if command is None:
        return
    found = shutil.which(command) if os.sep not in command else None
    where = f"here it is {found}" if found else "it is not found on this shell's PATH either"
    report(
        f"warning: agent {name!r} runs {command!r} by name; an editor started from the desktop "
        f"may not have this shell's PATH ({where}): if the agent does not start, give its "
        "absolute path as the command (docs/editors.md, the absolute-path pitfall)"
    )


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
    from acp_proxy.editors.wiring import command_by_name, wrap

    def change(text: str) -> Changed:
        changed = wrap(text, name, proxy_path(), db=db)
        args = changed.entry["args"]
        old = {**changed.entry, "command": args[args.index("--") + 1]}
        warn_if_found_by_name(name, command_by_name(old))
        return changed

    _apply(editor, settings, write, change)


@click.command("unwrap")
@click.argument("name")
@_editor_options
def unwrap_command(name: str, editor: str | None, settings: Path | None, write: bool) -> None:
    """Undo `wrap`: agent NAME runs its own command again, without the proxy."""
    from acp_proxy.editors.wiring import unwrap

    _apply(editor, settings, write, lambda text: unwrap(text, name))
