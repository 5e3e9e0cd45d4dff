"""The ``acp-proxy`` console entry point: ``record`` starts its agent before anything slow.

Rules:
- For ``acp-proxy record [OPTIONS] -- AGENT...`` the agent is launched first (launch.py: the
  agent, the recorder process told where to record, the forwarding threads), before the
  command-line library and everything else is imported: the client does not wait for them to
  see ``initialize`` answered.
- Only the unambiguous form is launched early: ``record`` first, then only options this module
  understands exactly as the command does (``--db``, ``--label``, ``--grace``, with a value
  after a space or ``=``), then ``--`` and a command. Anything else (``--help``, an unknown or
  malformed option) goes through the command line as usual, which also reports mistakes.
- The command line then parses the options as always; ``record`` claims the early launch if it
  is for the same command and database. If the command line stops first (a usage error), the
  early agent is killed: nothing is left behind.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .launch import Launched, launch
from .paths import DB_ENV, default_db_file
from .stderr import report

# The options of ``record`` that the early launch understands (tests check they still exist).
EARLY_OPTIONS = ("--db", "--label", "--grace")


def early_record_settings(args: Sequence[str]) -> tuple[list[str], str, str | None] | None:
    """``(agent argv, database, label)`` for an unambiguous ``record`` command line, or None."""
    if args[:1] != ["record"] or "--" not in args:
        return None
    split = args.index("--")
    agent = list(args[split + 1 :])
    if not agent:
        return None
    values: dict[str, str] = {}
    options = list(args[1:split])
    while options:
        option = options.pop(0)
        name, equals, value = option.partition("=")
        if name not in EARLY_OPTIONS or name in values:
            return None
        if not equals:
            if not options:
                return None
            value = options.pop(0)
        values[name] = value
    if "--grace" in values:
        try:
            if float(values["--grace"]) < 0:
                return None
        except ValueError:
            return None
    configured = values.get("--db") or os.environ.get(DB_ENV)
    return agent, configured or default_db_file(), values.get("--label")


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    settings = early_record_settings(args)
    early: Launched | None = None
    if settings is not None:
        agent, db_path, label = settings
        early = launch(agent, report, db_path, label)
    try:
        from .cli import main as command_line

        command_line(args=args, obj=early)
    finally:
        if early is not None:
            early.abandon()
