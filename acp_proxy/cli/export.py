"""``export``, ``import`` and ``datasette-metadata``. Wiring only.

Rules:
- ``export`` writes to ``-o FILE`` or stdout; the format comes from ``--format``, else from the
  file's extension (.jsonl, .md, .html), else Markdown. ``--format otlp`` instead sends the
  connection as a trace to an OTLP collector (``--endpoint``, else the OTEL_* variables) and
  says on stdout what it sent.
- Long exports and imports show a progress bar on stderr when it is a terminal, never
  otherwise (stdout may be the export itself).
- Errors are ``AcpProxyError``: one line on stderr, exit status 1.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import click
import orjson

from acp_proxy.cli.inspect import quiet_pipe
from acp_proxy.cli.main import db_option, open_ref, require_otel, resolve_db
from acp_proxy.errors import AcpProxyError
from acp_proxy.inspect import export as exporting
from acp_proxy.store import readers as store_read

EXTENSIONS = {".jsonl": "jsonl", ".md": "markdown", ".markdown": "markdown", ".html": "html"}
BAR_FROM = 5_000  # frames (or bytes / 200) below which no bar is worth showing


@contextlib.contextmanager
def progress_bar(length: int, label: str) -> Iterator[Callable[[int], None]]:
    """A progress callback: a bar on a terminal's stderr, nothing otherwise."""
    if length < BAR_FROM or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
        yield bar.update


@click.command("export")
@db_option
@click.argument("ref", required=False)
@click.option("--format", "fmt", type=click.Choice([*exporting.FORMATS, "otlp"]),
              help="jsonl: the exact frames, re-importable; markdown: the conversation as the "
              "user saw it; html: one self-contained page with the conversation and every frame; "
              "otlp: send it as an OpenTelemetry trace to a collector (docs/otel.md). "
              "[default: from the -o extension, else markdown]")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file instead of stdout.")  # fmt: skip
@click.option("--redact", is_flag=True, help="Replace secrets with [redacted:KIND:N] "
              "placeholders first, like `acp-proxy redact` (see docs/bug-reports.md).")  # fmt: skip
@click.option("--endpoint", metavar="URL", help="--format otlp: the collector's base URL (e.g. "
              "http://localhost:4318) [default: from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
              "OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318].")  # fmt: skip
@click.option("--otlp-content", is_flag=True, help="--format otlp: include prompt text, agent "
              "output, tool input and output and file contents, through the bug-report "
              "redactor.")  # fmt: skip
def export_command(
    db: Path | None, ref: str | None, fmt: str | None, output: Path | None, redact: bool,
    endpoint: str | None, otlp_content: bool,
) -> None:  # fmt: skip
    """Export one recorded connection as JSONL, Markdown or HTML, or send it as a trace.

    REF: a connection id, session id, label or uid; `last` (the default) is the newest; or a
    bug-report bundle or JSONL export file.
    """
    if fmt is None:
        fmt = EXTENSIONS.get(output.suffix.lower(), "markdown") if output else "markdown"
    if fmt == "otlp":
        if output is not None:
            raise click.UsageError("--format otlp sends to a collector: -o does not apply")
        _export_otlp(db, ref, endpoint, otlp_content)
        return
    if endpoint is not None or otlp_content:
        raise click.UsageError("--endpoint and --otlp-content go with --format otlp")
    if redact:
        _export_redacted(db, ref, fmt, output)
        return
    opened = open_ref(db, ref)
    database, connection_id = opened.db, opened.connection_id
    frames = store_read.connection(database, connection_id).frames
    with progress_bar(frames, f"exporting connection {connection_id}") as progress:
        if output is None:
            with quiet_pipe():
                exporting.export(database, connection_id, fmt, sys.stdout.buffer, progress)
            return
        try:
            # Exports hold what crossed the wire, like the recording: readable by the owner only.
            descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                exporting.export(database, connection_id, fmt, out, progress)
        except OSError as error:
            raise AcpProxyError(f"cannot write {output}: {error}") from error


def _export_otlp(db: Path | None, ref: str | None, endpoint: str | None, content: bool) -> None:
    """Send one connection as a trace; content (if asked for) is always redacted."""
    require_otel()
    from acp_proxy.otel.export import OtlpSender, builder_options, export_frames
    from acp_proxy.otel.span_values import ConnectionInfo
    from acp_proxy.otel.trace_ids import trace_id_of
    from acp_proxy.store.remote import exchanges as remote_exchanges

    opened = open_ref(db, ref)
    database, connection_id = opened.db, opened.connection_id
    row = store_read.connection(database, connection_id)
    sender = OtlpSender(endpoint)
    try:
        frames = store_read.frames(database, connection_id)
        info = ConnectionInfo(row.uid, row.started_ns, row.label, row.transport)
        exchanges = remote_exchanges(database, connection_id) if row.remote else []
        result = export_frames(frames, info, builder_options(content), sender, exchanges=exchanges)
    finally:
        sender.shutdown()
    if result.error is not None:
        raise AcpProxyError(f"cannot send spans to {sender.endpoint}: {result.error}")
    click.echo(
        f"sent {result.sent} spans of connection {connection_id} to {sender.endpoint} "
        f"(trace {trace_id_of(row.uid):032x})"
    )


def _export_redacted(db: Path | None, ref: str | None, fmt: str, output: Path | None) -> None:
    """The redacted export (verified before anything is written, like ``redact``)."""
    import io

    from acp_proxy.cli.share import redacted_jsonl, refuse, write_output
    from acp_proxy.store.refs import import_temporary

    data, _, leaks = redacted_jsonl(db, ref, drop_contents=False, env_file=None)
    if fmt != "jsonl":
        db_path, (connection_id, *_) = import_temporary(iter(io.BytesIO(data)))
        database = store_read.open_for_reading(db_path)
        rendered = io.BytesIO()
        exporting.export(database, connection_id, fmt, rendered)
        data = rendered.getvalue()
        leaks += rendered_leaks(fmt, data)
    refuse(leaks, force=False, what="redacted export")
    write_output(output, data)


def rendered_leaks(fmt: str, data: bytes) -> list[object]:
    from acp_proxy.share.redaction_io import finder_for, verify_member
    from acp_proxy.share.verify import Verifier

    name = "export.md" if fmt == "markdown" else "export.html"
    return list(verify_member(name, data, Verifier(finder_for(os.environ))))


def _lines(file: BinaryIO, progress: Callable[[int], None]) -> Iterator[bytes]:
    for line in file:
        progress(len(line))
        yield line


@click.command("import")
@db_option
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_command(db: Path | None, file: Path) -> None:
    """Load a JSONL export (`acp-proxy export --format jsonl`), a bundle, or a capture made by
    another tool into the database.

    The connection gets a new id; its uid, every frame and their exact bytes are kept. A
    connection whose uid the database already holds is refused (nothing is imported). A file
    of several exports one after the other (a cassette with several episodes) becomes one
    connection per export, in one transaction.

    Captures of other tools, recognized by their content (docs/inspect.md): a JSONL of raw
    frames (`direction` plus `raw` or `raw_base64`, optional `mono_ns`/`wall_ns`), the NDJSON
    trace of sacp-conductor, the JSON array Zed's ACP log panel copies, and the session export
    of acp-devtools. Their parsed columns are derived from the frames as `record` derives them;
    the connection's label is the file's name, its status `imported`.
    """
    db_path = resolve_db(db)
    import zipfile

    from acp_proxy.store.importer import import_jsonl

    if zipfile.is_zipfile(file) or file.suffix in (".acpbundle", ".zip"):  # its frames.jsonl
        from acp_proxy.store.recording_files import frames_lines

        connection_ids = import_jsonl(db_path, frames_lines(file))
        click.echo(f"imported {file} as {_connections(connection_ids)} in {db_path}")
        return
    bar = progress_bar(file.stat().st_size // 200, f"importing {file.name}")
    with bar as tick, file.open("rb") as handle:
        lines = _lines(handle, lambda n: tick(n // 200))
        connection_ids = import_jsonl(db_path, lines, label=file.stem)
    click.echo(f"imported {file} as {_connections(connection_ids)} in {db_path}")


def _connections(ids: list[int]) -> str:
    if len(ids) == 1:
        return f"connection {ids[0]}"
    return f"connections {', '.join(map(str, ids))} ({len(ids)} episodes)"


@click.command("datasette-metadata")
@db_option
def datasette_metadata_command(db: Path | None) -> None:
    """Print Datasette metadata (descriptions, facets, canned queries) for the database.

    acp-proxy datasette-metadata > acp.json && datasette "$DB" -m acp.json
    """
    from acp_proxy.inspect.datasette import metadata

    click.echo(orjson.dumps(metadata(resolve_db(db).stem), option=orjson.OPT_INDENT_2).decode())
