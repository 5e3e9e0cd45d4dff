"""Terminal conventions of the reading commands: colour, width and paging.

Rules:
- Colour: ``--color auto`` (the default) colours only a terminal and never when ``NO_COLOR``
  is set to anything non-empty (no-color.org); ``always`` and ``never`` are what they say.
  The choice is put on the click context, which every ``click.echo`` consults.
- Width: lines are cut to the terminal's width (``COLUMNS`` wins, as ``shutil`` reads it) only
  when stdout is a terminal, paged or not; into a pipe or a file they keep their full,
  stable form.
- Paging: on a terminal, long output goes through ``$PAGER`` (``less -R`` when unset; ``LESS``
  defaults to ``FRX`` as git sets it, so output that fits one screen is just printed). An empty
  ``PAGER``, ``--no-pager``, or a pager that cannot start means plain output. The command
  waits for the pager to end, and quitting the pager early ends the command quietly.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

COLOR_CHOICES = ("auto", "always", "never")
DEFAULT_PAGER = "less -R"


def colour_wanted(choice: str, stream_is_terminal: bool, environ: dict[str, str]) -> bool:
    """Whether to write colour, from ``--color`` and the environment."""
    if choice == "always":
        return True
    if choice == "never" or environ.get("NO_COLOR"):
        return False
    return stream_is_terminal


def _set_colour(ctx: click.Context, _param: click.Parameter, value: str) -> str:
    ctx.color = colour_wanted(value, sys.stdout.isatty(), dict(os.environ))
    return value


def color_option(function: F) -> F:
    """``--color auto|always|never`` (and ``NO_COLOR``), applied to the click context."""
    return click.option(
        "--color",
        "color",
        type=click.Choice(COLOR_CHOICES),
        default="auto",
        show_default=True,
        expose_value=False,
        is_eager=True,
        callback=_set_colour,
        help="Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.",
    )(function)


def pager_option(function: F) -> F:
    return click.option(
        "--no-pager",
        "no_pager",
        is_flag=True,
        help="Never page the output through $PAGER, even on a terminal.",
    )(function)


_paging: list[Any] = []  # the terminal that ``paged`` took stdout from, while it pages


def width() -> int | None:
    """The terminal's width in columns when stdout is a terminal, else None (no cutting).

    While output is paged, stdout is the pager's pipe but the lines still end on the
    terminal: its width is the one that counts.
    """
    if not (_paging or sys.stdout.isatty()):
        return None
    return terminal_columns()


def terminal_columns() -> int:
    """What ``shutil.get_terminal_size`` says (``COLUMNS`` first), without importing shutil
    (and the compression modules it loads) into every reading command."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno() if sys.__stdout__ else 1).columns
    except (AttributeError, ValueError, OSError):
        return 80


def pager_command(environ: dict[str, str]) -> list[str] | None:
    """The pager to run, or None when paging is switched off (``PAGER=``)."""
    configured = environ.get("PAGER")
    if configured is not None and not configured.strip():
        return None
    try:
        return shlex.split(configured or DEFAULT_PAGER)
    except ValueError:
        return None


@contextlib.contextmanager
def paged(enabled: bool = True) -> Iterator[None]:
    """Send what is echoed inside to the pager when stdout is a terminal (see module rules)."""
    command = pager_command(dict(os.environ)) if enabled and sys.stdout.isatty() else None
    if command is None:
        yield
        return
    import subprocess  # only when there is a pager to run

    environ = dict(os.environ)
    environ.setdefault("LESS", "FRX")
    try:
        pager = subprocess.Popen(command, stdin=subprocess.PIPE, env=environ)
    except OSError:
        yield
        return
    assert pager.stdin is not None
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.color is None:
        ctx.color = colour_wanted("auto", True, environ)  # the pager shows colour (-R)
    terminal = sys.stdout
    sys.stdout = io.TextIOWrapper(pager.stdin, encoding="utf-8", errors="replace")
    _paging.append(terminal)
    try:
        yield
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.close()
        sys.stdout = terminal
        _paging.pop()
        while True:
            try:
                pager.wait()
                break
            except KeyboardInterrupt:  # the pager has the terminal; Ctrl-C is its business
                continue
