"""``search``: find a string (or a regular expression) in every recording. Wiring only.

Rules:
- Exit status as grep's: 0 when something was found, 1 when nothing was, 2 on an error (a bad
  database, REF or pattern: one line on stderr, never a traceback).
- Full text needs the index up to date: frames it does not cover yet (older recordings,
  imports) are indexed first, with a progress bar on stderr. A database that cannot be written
  is searched as far as its index goes, with a warning saying how much it misses.
- A REF that is a bundle or JSONL export file is searched too (imported into a temporary
  database first); its hits are named ``FILE:ID:SEQ`` instead of ``ID:SEQ``.
- Hits stream to stdout as they are found; ``-n N`` stops after N of them.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import click
import orjson

from acp_proxy.cli.inspect import quiet_pipe
from acp_proxy.cli.main import db_option, report, resolve_db
from acp_proxy.errors import AcpProxyError
from acp_proxy.plural import counted
from acp_proxy.store.readers import DIRECTIONS

EXIT_NONE, EXIT_ERROR = 1, 2


def _bring_up_to_date(db: Any, name: str) -> None:
    """Index what the index misses, with a progress bar; warn if the file cannot be written."""
    from acp_proxy.store.search import catch_up, index_state

    state = index_state(db)
    if not state.pending:
        return
    label = (
        f"acp-proxy: indexing {counted(state.pending, 'frame', grouped=True)} of {name} for search"
    )
    with click.progressbar(
        length=state.pending, label=label, file=sys.stderr, show_eta=False
    ) as bar:
        catch_up(db, state, bar.update)


def _open_for_search(path: Path, name: str | None = None) -> Any:
    from acp_proxy.store.search import index_state, open_for_search

    db, writable = open_for_search(path)
    if writable:
        _bring_up_to_date(db, name or str(path))
    elif pending := index_state(db).pending:
        frames = counted(pending, "frame", grouped=True)
        report(f"{path} is read-only: {frames} not indexed and not searched")
    return db


@click.command("search")
@db_option
@click.argument("pattern")
@click.argument("refs", nargs=-1, metavar="[REF]...")
@click.option("-E", "--regex", is_flag=True, help="PATTERN is a regular expression (RE2: "
              "linear time; Python's syntax without backreferences or lookaround), matched "
              "against each recorded line as it was recorded.")  # fmt: skip
@click.option("-i", "--ignore-case", is_flag=True,
              help="With --regex: ignore case (full text always does).")  # fmt: skip
@click.option("--method", help="Only frames of this method (a glob: 'session/*').")
@click.option("--direction", type=click.Choice(sorted(DIRECTIONS)),
              help="Only frames going this way (client = c2a, agent = a2c).")  # fmt: skip
@click.option(
    "--since",
    "since",
    metavar="T",
    help="Only frames recorded since T: 2h, 3d, today, yesterday, 2026-11-30T14:00.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit.")
@click.option("-n", "--limit", type=click.IntRange(min=1), help="Stop after N hits.")
def search_command(
    db: Path | None, pattern: str, refs: tuple[str, ...], regex: bool, ignore_case: bool,
    method: str | None, direction: str | None, since: str | None, as_json: bool,
    limit: int | None,
) -> None:  # fmt: skip
    """Find PATTERN in the frames of every recording (or of each REF).

    By default PATTERN is text: case-insensitive, accents ignored, words in order, the last
    one possibly unfinished (`permission den` finds "permission denied"); quotes, `*` and
    every other character are taken literally. It looks at the words of each frame's string
    and number values (JSON escapes undone) and at whole stderr lines. --regex matches a
    regular expression against the recorded line instead.

    Each hit: connection id and seq (as `show --from` takes them), direction, method, and a
    snippet with the match marked. Exits 0 when something was found, 1 when nothing was, 2
    on errors, as grep does.

    REF: a connection id, session id, label, uid, `last`, or a bundle or JSONL export file.
    """
    from acp_proxy.inspect.render.hits import hit_line, hit_record
    from acp_proxy.inspect.since import since_ns
    from acp_proxy.store.recording_files import is_recording_file
    from acp_proxy.store.refs import recording_file_episodes, resolve_ref
    from acp_proxy.store.search import SearchQuery, compile_pattern
    from acp_proxy.store.search import search as run_search

    try:
        since_value = None if since is None else since_ns(since, time.time_ns())
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--since") from error
    base = SearchQuery(
        pattern, regex=regex, ignore_case=ignore_case, method=method, direction=direction,
        since_ns=since_value,
    )  # fmt: skip
    found = 0
    colour = sys.stdout.isatty() and not as_json
    try:
        compile_pattern(base)
        files = [ref for ref in refs if is_recording_file(ref)]
        names = [ref for ref in refs if ref not in files]
        targets: list[tuple[Any, list[int] | None, str | None]] = []
        if names or not files:
            database = _open_for_search(resolve_db(db))
            ids = sorted({resolve_ref(database, ref) for ref in names}) if names else None
            targets.append((database, ids, None))
        for file in files:
            path, episodes = recording_file_episodes(file)
            targets.append((_open_for_search(path, file), episodes, file))
        with quiet_pipe():
            for database, only, origin in targets:
                left = None if limit is None else limit - found
                query = dataclasses.replace(base, connections=only, limit=left)
                for hit in run_search(database, query):
                    where = (
                        f"{hit.connection_id}"
                        if origin is None
                        else f"{origin}:{hit.connection_id}"
                    )
                    if as_json:
                        record = hit_record(hit, hit.connection_id if origin is None else where)
                        click.echo(orjson.dumps(record).decode())
                    else:
                        click.echo(hit_line(hit, where, colour=colour), color=colour)
                    found += 1
                    if limit is not None and found >= limit:
                        break
                if limit is not None and found >= limit:
                    break
    except AcpProxyError as error:
        report(str(error))
        sys.exit(EXIT_ERROR)
    sys.exit(0 if found else EXIT_NONE)
