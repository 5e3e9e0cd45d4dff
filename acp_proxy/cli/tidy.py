"""Keeping the database tidy: ``delete REF...`` and ``prune``. Wiring only.

Rules:
- Never a live connection (store/tidy.py decides what is live): ``delete`` naming one refuses
  it and removes nothing; ``prune`` passes over it.
- What was removed, and how much space came back, is said on stdout in one line; ``--dry-run``
  says what would go and changes nothing. An unknown REF or a live one (exit 2)
  stops the command before anything is removed.
- ``prune --keep 0`` (with no ``--older-than``) removes every recording that is not live: it
  asks first on a terminal (no: exit 1), and elsewhere needs ``--yes`` (else exit 2).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from acp_proxy.cli.main import db_option, resolve_db
from acp_proxy.display import visible
from acp_proxy.inspect.render import words as present
from acp_proxy.plural import counted
from acp_proxy.stderr import report
from acp_proxy.store import tidy
from acp_proxy.store.database import connect
from acp_proxy.store.refs import resolve_ref

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_age(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``2w``, ``90m``, ``45s`` (a bare number is days)."""
    if text.strip().replace(".", "", 1).isdigit():
        return float(text) * _UNITS["d"]
    match = _AGE.match(text.lower())
    if match is None:
        raise click.BadParameter(f"{text!r} is not an age such as 30d, 12h, 2w, 90m")
    return float(match.group(1)) * _UNITS[match.group(2)]


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def _said(removed: tidy.Removed, db_path: Path) -> str:
    ids = ", ".join(str(i) for i in removed.connections)
    line = (
        f"deleted {counted(len(removed.connections), 'connection')} ({ids}): "
        f"{counted(removed.frames, 'frame')}, {counted(removed.findings, 'finding')}"
    )
    if removed.reclaimed is None:
        return f"{line}; space not reclaimed ({removed.vacuum_error}): run prune again later"
    return f"{line}; {human_bytes(removed.reclaimed)} reclaimed, {db_path} is now " + human_bytes(
        tidy.database_bytes(db_path)
    )


def _describe(candidate: tidy.Candidate) -> str:
    label = f" ({visible(candidate.label)})" if candidate.label else ""
    return f"{candidate.id}{label}  {present.wall(candidate.started_ns)}"


@click.command("delete")
@db_option
@click.argument("refs", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; change nothing.")
def delete_command(db: Path | None, refs: tuple[str, ...], dry_run: bool) -> None:
    """Delete recordings with their frames and findings, then reclaim the space.

    REF: a connection id, session id, label or uid; `last` is the newest. A connection that
    is still being recorded is refused (nothing is deleted).
    """
    db_path = resolve_db(db)
    database = connect(db_path, create=False)
    ids = sorted({resolve_ref(database, ref) for ref in refs})
    live = [c for c in tidy.candidates(database, ids) if tidy.is_live(c)]
    if live:
        report(
            f"connection {', '.join(str(c.id) for c in live)} is still being recorded: "
            "nothing deleted"
        )
        sys.exit(2)
    if dry_run:
        for candidate in tidy.candidates(database, ids):
            click.echo(f"would delete {_describe(candidate)}")
        return
    click.echo(_said(tidy.remove(database, db_path, ids), db_path))


@click.command("prune")
@db_option
@click.option("--older-than", "older_than", metavar="AGE",
              help="Remove recordings started more than AGE ago: 30d, 12h, 2w, 90m.")  # fmt: skip
@click.option("--keep", type=click.IntRange(min=0), default=None, metavar="N",
              help="Always keep the N recordings that started last, whatever their age; "
              "alone, remove all the others (0: every recording).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask before removing every recording.")
def prune_command(
    db: Path | None, older_than: str | None, keep: int | None, dry_run: bool, yes: bool
) -> None:
    """Remove old recordings with their frames and findings, then reclaim the space.

    Removes those started more than --older-than ago, except the --keep that started last;
    give at least one of the two. `--keep 0` alone removes every recording (it asks first).
    Connections still being recorded are never removed.

        acp-proxy prune --older-than 30d --keep 20 --dry-run
    """
    if older_than is None and keep is None:
        raise click.UsageError("say what to prune: --older-than AGE and/or --keep N")
    before_ns = None
    if older_than is not None:
        before_ns = time.time_ns() - int(parse_age(older_than) * 1e9)
    db_path = resolve_db(db)
    database = connect(db_path, create=False)
    chosen = tidy.prune_candidates(
        tidy.candidates(database), before_ns=before_ns, keep=keep or 0, alive=tidy.process_alive
    )
    if not chosen:
        click.echo("nothing to prune")
        return
    if dry_run:
        for candidate in chosen:
            click.echo(f"would delete {_describe(candidate)}")
        return
    if keep == 0 and older_than is None and not yes:
        _confirm_everything(len(chosen))
    click.echo(_said(tidy.remove(database, db_path, [c.id for c in chosen]), db_path))


def _confirm_everything(count: int) -> None:
    """``--keep 0`` alone removes every recording: ask (see the rules)."""
    noun = "recording" if count == 1 else "recordings"
    if not sys.stdin.isatty():
        report(f"prune --keep 0 removes every recording ({count} {noun}): add --yes, or see "
               "them first with --dry-run")  # fmt: skip
        sys.exit(2)
    if not click.confirm(f"remove all {count} {noun}?", err=True):
        sys.exit(1)
