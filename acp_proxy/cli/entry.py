"""The ``acp-proxy`` console entry point: ``record`` starts its agent before anything slow.

Rules:
- For ``acp-proxy record [OPTIONS] -- AGENT...`` the agent is launched first (launch.py: the
  agent, the recorder process told where to record, the forwarding threads), before the
  command-line library and everything else is imported: the client does not wait for them to
  see ``initialize`` answered.
- Before anything opens a file: a standard descriptor (0, 1 or 2) the proxy was started
  without is opened on ``/dev/null``, so that no pipe or database of ours ever takes its
  number (the agent would read our stop pipe as its stdin, and our words would go into it).
- Only the unambiguous form is launched early: ``record`` first, then only options this module
  understands exactly as the command does (``--db``, ``--label``, ``--grace``,
  ``--max-recorder-wait``, with a value after a space or ``=``; the flags ``--check``, ``--ui``
  and ``--otlp-content``; ``--otlp`` alone or with a URL after ``=`` or a space), then ``--``
  and a command. Anything else (``--help``, an unknown or malformed option, ``--otlp`` without
  the ``otel`` extra) goes through the command line as usual, which also reports mistakes.
- ``acp-proxy --version`` alone is answered here too, in click's words, without click.
- So is the unambiguous ``replay [--db DB] [--record] REF`` (in any order, ``--db`` with its
  value after a space or ``=``, given once, not a folder; REF not an option): every other
  option at its default, it means exactly what the command means (cli/replay_plain.py); the
  client's first answer does not wait for click. Anything else goes through the command line.
- That form is then run without the command-line library at all (its options were just read
  here, exactly as the command would read them: tests/test_record.py compares the two), which
  keeps its import time and memory out of every proxied session. Everything else goes through
  the command line; if it stops before claiming an early launch, the agent is killed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NamedTuple

from acp_proxy.paths import DB_ENV, default_db_file
from acp_proxy.record.defaults import DEFAULT_GRACE, DEFAULT_MAX_WAIT
from acp_proxy.stderr import report

# The options of ``record`` that the early launch understands (tests check they still exist).
EARLY_OPTIONS = ("--db", "--label", "--grace", "--max-recorder-wait")
EARLY_FLAGS = ("--check", "--otlp-content", "--ui")
OPTIONAL_VALUE = "--otlp"  # a flag, or an option with a value (as click reads it)


class EarlyRecord(NamedTuple):
    agent: list[str]
    db_path: str
    label: str | None
    grace: float
    check: bool
    otlp: str | None = None
    otlp_content: bool = False
    max_recorder_wait: float = DEFAULT_MAX_WAIT
    ui: bool = False


def open_missing_standard_fds() -> None:
    """Give each of fds 0, 1, 2 that is not open ``/dev/null`` (see the rules)."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, flags)  # the lowest free number: this one
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)


def early_record_settings(args: Sequence[str]) -> EarlyRecord | None:
    """The settings of an unambiguous ``record`` command line, or None."""
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
        if name in values:
            return None
        if name in EARLY_FLAGS and not equals:
            values[name] = ""
            continue
        if name == OPTIONAL_VALUE:
            if not equals and options and not options[0].startswith("-"):
                value = options.pop(0)
            values[name] = value
            continue
        if name not in EARLY_OPTIONS:
            return None
        if not equals:
            if not options:
                return None
            value = options.pop(0)
        values[name] = value
    try:
        grace = float(values.get("--grace", DEFAULT_GRACE))
        max_wait = float(values.get("--max-recorder-wait", DEFAULT_MAX_WAIT))
    except ValueError:
        return None
    if not grace >= 0 or not max_wait >= 0:  # also refuses nan
        return None
    otlp = values.get(OPTIONAL_VALUE)
    if "--otlp-content" in values and otlp is None:
        return None  # a mistake: the command line says so
    if otlp is not None:
        from acp_proxy.otel import missing_extra

        if missing_extra() is not None:
            return None
    configured = values.get("--db") or os.environ.get(DB_ENV)
    return EarlyRecord(
        agent, configured or default_db_file(), values.get("--label"), grace, "--check" in values,
        otlp, "--otlp-content" in values, max_wait, "--ui" in values,
    )  # fmt: skip


class EarlyReplay(NamedTuple):
    db: str | None
    ref: str
    record: bool


def early_replay_settings(args: Sequence[str]) -> EarlyReplay | None:
    """The settings of an unambiguous plain ``replay`` command line, or None (see the rules)."""
    if args[:1] != ["replay"]:
        return None
    db: str | None = None
    refs: list[str] = []
    record = False
    rest = list(args[1:])
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if word == "--record" and not record:
            record = True
        elif name == "--db" and db is None:
            if not equals:
                if not rest:
                    return None
                value = rest.pop(0)
            db = value
        elif word and not word.startswith("-"):
            refs.append(word)
        else:
            return None
    if len(refs) != 1 or db == "":
        return None
    if db is None and DB_ENV in os.environ:
        db = os.environ[DB_ENV]
        if not db:
            return None
    if db is not None and os.path.isdir(db):
        return None  # the command line says why
    return EarlyReplay(db, refs[0], record)


def main(argv: Sequence[str] | None = None) -> None:
    open_missing_standard_fds()
    args = list(sys.argv[1:] if argv is None else argv)
    settings = early_record_settings(args)
    if settings is not None:
        from acp_proxy.cli.sinks import recorder_sinks
        from acp_proxy.record.launch import launch  # only here: other commands do not need it

        otlp: dict[str, object] | None = None
        if settings.otlp is not None:
            otlp = {"endpoint": settings.otlp or None, "content": settings.otlp_content}
        launched = launch(
            settings.agent, report, settings.db_path, settings.label, check=settings.check,
            otlp=otlp, max_wait=settings.max_recorder_wait, sinks=recorder_sinks,
        )  # fmt: skip
        from pathlib import Path

        from acp_proxy.record.session import RecordOptions, record

        options = RecordOptions(
            settings.agent, Path(settings.db_path), label=settings.label, grace=settings.grace,
            check=settings.check, otlp=settings.otlp, otlp_content=settings.otlp_content,
            max_recorder_wait=settings.max_recorder_wait, ui=settings.ui, sinks=recorder_sinks,
        )  # fmt: skip
        sys.exit(record(options, report, launched))
    if args == ["--version"]:  # what click's version option says, without loading click
        from acp_proxy import __version__

        sys.stdout.write(f"acp-proxy, version {__version__}\n")
        sys.stdout.flush()
        return
    replay = early_replay_settings(args)
    if replay is not None:
        from acp_proxy.cli.replay_plain import replay_early

        replay_early(args, *replay)
    from acp_proxy.cli.main import main as command_line

    command_line(args=args)
