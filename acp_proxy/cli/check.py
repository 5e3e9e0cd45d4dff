"""The ``check``, ``diff`` and ``schemas`` commands: wiring only (see checks.py, diffing.py).

Rules:
- Exit status: 0 clean (or the same), 1 findings (or different), 2 usage errors, including
  an unknown REF or rule, and a --schema-dir that holds no schemas (one line on stderr,
  never a traceback).
- Schemas are needed only when ACP000 (schema validation) runs; ``--ignore ACP000`` checks
  the stateful rules alone. Without schemas installed they are fetched on first use, or
  schema validation is skipped with one line saying how to get it (check/schema_setup.py).
- Reports go to stdout (these commands are not on the protocol channel).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from acp_proxy.check.schema_files import (
    DEFAULT_VERSION,
    HOW_TO_GET,
    SCHEMAS_ENV,
    cache_root,
    installed,
)
from acp_proxy.cli.main import db_option, open_ref, report, resolve_db
from acp_proxy.errors import AcpProxyError

if TYPE_CHECKING:
    from acp_proxy.check.budgets import Budget
    from acp_proxy.check.report import Checked

EXIT_FOUND, EXIT_USAGE = 1, 2


def _fail(error: AcpProxyError) -> None:
    report(str(error))
    sys.exit(EXIT_USAGE)


@click.command()
@db_option
@click.argument("refs", nargs=-1, metavar="[REF]...")
@click.option("--all", "every", is_flag=True, help="Check every connection in the database.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "junit", "sarif"]), default="text",
    show_default=True,
    help="Report format (junit: JUnit XML for CI systems; sarif: SARIF 2.1.0 for code scanning).",
)  # fmt: skip
@click.option(
    "--max-latency", "budgets", multiple=True, metavar="BUDGET",
    help="Fail (rule LAT001) when a method's latency is over BUDGET: METHOD=pN:DURATION or "
    "METHOD=max:DURATION, e.g. 'session/prompt=p99:30s', 'fs/*=max:500ms' (repeatable; "
    "latency as `stats --by-method` measures it).",
)  # fmt: skip
@click.option("--select", multiple=True, metavar="RULE", help="Run only these rules (or prefixes).")
@click.option("--ignore", multiple=True, metavar="RULE", help="Skip these rules (or prefixes).")
@click.option(
    "--schema-dir", type=click.Path(file_okay=False, path_type=Path), envvar=SCHEMAS_ENV,
    show_envvar=True, help="Folder with v1/ and v2/ schemas [default: newest `schemas fetch`].",
)  # fmt: skip
def check(
    db: Path | None, refs: tuple[str, ...], every: bool, fmt: str, budgets: tuple[str, ...],
    select: tuple[str, ...], ignore: tuple[str, ...], schema_dir: Path | None,
) -> None:  # fmt: skip
    """Check recorded ACP traffic against the spec's rules and the official JSON Schemas.

    REF is a connection id, session id, label, `last` (the default), or a bug-report bundle
    or JSONL export file (every episode of a file that holds several). Every message is
    validated against the schema of its own method for the negotiated protocol version, and
    the stateful rules of docs/checks.md run over each connection in order. With
    --max-latency, each method's request-to-response latency is held to its budget too.
    Exits 1 when anything is found, 0 when clean, 2 on usage errors.

    \b
        acp-proxy check --all --format sarif > acp-check.sarif
        acp-proxy check ci-run.jsonl --max-latency 'session/prompt=p99:30s'
    """
    from acp_proxy.check.budgets import LATENCY_RULE, parse_budget
    from acp_proxy.check.engine import select_rules
    from acp_proxy.check.report import render_json, render_junit, render_text
    from acp_proxy.check.schema_setup import obtain
    from acp_proxy.check.scope_check import check_scope
    from acp_proxy.store.frames import all_connections, scope
    from acp_proxy.store.refs import open_database

    try:
        rules = select_rules(select, ignore)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--select/--ignore") from error
    try:
        limits = [parse_budget(text) for text in budgets]
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--max-latency") from error
    try:
        book = None
        if "ACP000" in rules:
            book = obtain(schema_dir, report).book
            if book is None:
                rules = select_rules(select, (*ignore, "ACP000"))
        targets = []
        for ref in refs if refs or every else (None,):
            opened = open_ref(db, ref, episodes=True)  # a file: every episode of it
            uri = str(ref) if opened.from_file else str(resolve_db(db))
            targets += [(opened.db, target, uri) for target in opened.targets]
        if every:
            database = open_database(resolve_db(db))
            targets += [(database, scope(database, str(c)), str(resolve_db(db)))
                        for c in all_connections(database)]  # fmt: skip
        checked = [check_scope(database, target, book, rules) for database, target, _ in targets]
        if limits:
            checked = [_with_budgets(c, database, limits) for c, (database, _, _) in
                       zip(checked, targets, strict=True)]  # fmt: skip
    except AcpProxyError as error:
        _fail(error)
    ordered = sorted(rules) + ([LATENCY_RULE.id] if limits else [])
    if fmt == "sarif":
        from acp_proxy import __version__
        from acp_proxy.check.report import Source, render_sarif
        from acp_proxy.store.readers import connection

        sources = [Source(uri, connection(database, target.connection_id).uid)
                   for database, target, uri in targets]  # fmt: skip
        click.echo(render_sarif(checked, ordered, sources, __version__), nl=False)
    elif fmt == "json":
        click.echo(render_json(checked, ordered, book.source if book else None), nl=False)
    elif fmt == "junit":
        click.echo(render_junit(checked, ordered), nl=False)
    else:
        click.echo(render_text(checked, ordered), nl=False)
    sys.exit(EXIT_FOUND if any(c.findings for c in checked) else 0)


def _with_budgets(checked: Checked, database: Any, limits: list[Budget]) -> Checked:
    """``checked`` with the LAT001 findings of its connection's calls over ``limits``."""
    from acp_proxy.check.budgets import over_budget
    from acp_proxy.store.readers import calls

    found = over_budget(calls(database, checked.connection_id), limits, checked.connection_id)
    return dataclasses.replace(checked, findings=[*checked.findings, *found])


@click.command()
@db_option
@click.argument("ref_a", metavar="A")
@click.argument("ref_b", metavar="B")
@click.option(
    "--other-db", type=click.Path(dir_okay=False, path_type=Path),
    help="Database holding B [default: the same as A].",
)  # fmt: skip
@click.option("--strict", is_flag=True, help="Compare raw bytes, without normalizing.")
@click.option(
    "--ignore", multiple=True, metavar="JSONPATH",
    help="Leave out matching members, e.g. '$.params.cwd' or '$..usage' (repeatable).",
)  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--max-slowdown", "slowdown_limits", multiple=True, metavar="LIMIT",
    help="Gate: fail when B is slower than A by more than LIMIT: METHOD=pN:PERCENT% or "
    "METHOD=pN:+DURATION (or max), e.g. 'session/prompt=p95:20%', '*=max:+2s' (repeatable).",
)  # fmt: skip
@click.option(
    "--max-capability-drift", "allowed_drift", type=click.IntRange(min=0), metavar="N",
    help="Gate: fail when more than N capabilities of the initialize exchange differ "
    "(0: any change fails).",
)  # fmt: skip
def diff(
    db: Path | None, ref_a: str, ref_b: str, other_db: Path | None, strict: bool,
    ignore: tuple[str, ...], fmt: str, slowdown_limits: tuple[str, ...],
    allowed_drift: int | None,
) -> None:  # fmt: skip
    """Compare two recordings (or sessions) message by message; show the first divergence.

    A and B are REFs (connection id, session id, label, `last`, or a bug-report bundle or
    JSONL export file); a session id compares that session's frames only. Ids, session and
    message ids, timestamps and trace context are normalized first (see docs/diff.md); each
    direction is compared in its own order. Exits 1
    when they differ, 0 when they are the same, 2 on usage errors.

    With a gate (--max-slowdown, --max-capability-drift) the exit status answers the gates
    instead: 1 when B is slower or has drifted beyond them, 0 otherwise, the messages still
    compared and shown. See docs/diff.md.
    """
    from acp_proxy.check.drift import parse_slowdown
    from acp_proxy.check.report import render_diff_json, render_diff_text
    from acp_proxy.check.scope_diff import check_ignore, diff_scopes

    try:
        check_ignore(ignore)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--ignore") from error
    try:
        limits = [parse_slowdown(text) for text in slowdown_limits]
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--max-slowdown") from error
    try:
        sides = []
        for ref, db_path in ((ref_a, db), (ref_b, other_db or db)):
            opened = open_ref(db_path, ref, sessions=True)
            sides.append((opened.db, opened.target))
        result = diff_scopes(sides[0], sides[1], strict=strict, ignore=ignore).diff
        gated = bool(limits) or allowed_drift is not None
        gates = _gates(sides, limits, allowed_drift) if gated else None
    except AcpProxyError as error:
        _fail(error)
    if fmt == "json":
        shown = render_diff_json(result)
        if gates is not None:
            shown = _with_gates_json(shown, gates)
        click.echo(shown, nl=False)
    else:
        click.echo(render_diff_text(result, (ref_a, ref_b)), nl=False)
        if gates is not None:
            from acp_proxy.check.drift import gate_lines
            from acp_proxy.display import visible

            lines = gate_lines(gates.slowdowns, gates.drifts, allowed_drift)
            for line in lines or ["gates: within every limit"]:
                click.echo(visible(line))
    if gates is not None:
        sys.exit(EXIT_FOUND if gates.failed else 0)
    sys.exit(0 if result.equal else EXIT_FOUND)


@dataclasses.dataclass(frozen=True, slots=True)
class _Gates:
    slowdowns: list[Any]
    drifts: list[Any]
    allowed_drift: int | None

    @property
    def failed(self) -> bool:
        drifted = self.allowed_drift is not None and len(self.drifts) > self.allowed_drift
        return bool(self.slowdowns) or drifted


def _gates(sides: list[Any], limits: list[Any], allowed_drift: int | None) -> _Gates:
    """The slowdowns of B against A and the capability drifts between them (check/drift.py)."""
    from acp_proxy.check.drift import capabilities, drifts, slowdowns
    from acp_proxy.store.frames import frames
    from acp_proxy.store.readers import calls

    (db_a, a), (db_b, b) = sides
    found = slowdowns(calls(db_a, a.connection_id), calls(db_b, b.connection_id), limits)
    declared = [
        capabilities(frames(db, dataclasses.replace(target, session_id=None)))
        for db, target in sides
    ]
    return _Gates(found, drifts(*declared), allowed_drift)


def _with_gates_json(shown: str, gates: _Gates) -> str:
    import orjson

    from acp_proxy.check.drift import MISSING
    from acp_proxy.display import json_visible

    def value(v: Any) -> Any:
        return None if v is MISSING else v

    document = orjson.loads(shown)
    document["gates"] = {
        "failed": gates.failed,
        "slowdowns": [
            {"method": s.method, "direction": s.direction, "statistic": s.statistic,
             "before_ns": s.before_ns, "after_ns": s.after_ns, "limit": s.limit}
            for s in gates.slowdowns
        ],
        "capability_drift": {
            "allowed": gates.allowed_drift,
            "changed": [
                {"path": d.path, "before": value(d.before), "after": value(d.after),
                 "before_present": d.before is not MISSING, "after_present": d.after is not MISSING}
                for d in gates.drifts
            ],
        },
    }  # fmt: skip
    return json_visible(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()) + "\n"


@click.group()
def schemas() -> None:
    """Install and list the official ACP JSON Schemas that `check` validates against."""


@schemas.command()
@click.option(
    "--version", "version", default=DEFAULT_VERSION, show_default=True,
    help="Version (or npm tag) of @agentclientprotocol/sdk to take the schemas from.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Fetch again even if that version is installed.")
def fetch(version: str, force: bool) -> None:
    """Fetch the schemas with `npm pack @agentclientprotocol/sdk@VERSION` into the user cache.

    Only schema/v1 and schema/v2 are kept, verified, and put in
    $XDG_CACHE_HOME/acp-proxy/schemas/VERSION/. Running it again does nothing.
    """
    from acp_proxy.check.schema_fetch import fetch as run_fetch

    try:
        done = run_fetch(version, cache_root(), force=force)
    except AcpProxyError as error:
        _fail(error)
    verb = "installed" if done.fetched else "already installed"
    click.echo(f"{verb}: @agentclientprotocol/sdk {done.version} schemas in {done.folder}")
    for f in done.files:
        click.echo(
            f"  v{f.version} {f.stability:8} {f.definitions:4} definitions {f.methods:3} methods "
            f"{f.update_kinds:3} update kinds  sha256 {f.sha256[:16]}"
        )


@schemas.command(name="list")
def list_schemas() -> None:
    """List installed schema versions (the newest is the one `check` uses by default)."""
    versions = installed(cache_root())
    if not versions:
        click.echo(f"none installed: {HOW_TO_GET}")
        return
    for folder in versions:
        click.echo(f"{folder.name}\t{folder}")
