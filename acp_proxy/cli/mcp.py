"""``mcp``: serve the recordings to a coding agent over the Model Context Protocol. Wiring only.

Rules:
- stdout is the MCP channel: nothing here writes to it; warnings go to stderr.
- The ``mcp`` SDK is an optional extra: without it, one line on stderr says how to install
  it, exit 2. So are a missing database and an unreadable file.
- Redaction is on unless ``--no-redact``, which is said on stderr as a warning.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import click

from acp_proxy.cli.main import db_option, report, resolve_db
from acp_proxy.errors import AcpProxyError

EXIT_USAGE = 2
MISSING_SDK = "the MCP server needs the MCP Python SDK: pip install 'acp-proxy[mcp]'"


@click.command("mcp")
@db_option
@click.argument("files", nargs=-1, metavar="[FILE]...",
                type=click.Path(exists=True, dir_okay=False))  # fmt: skip
@click.option(
    "--no-redact",
    is_flag=True,
    help="Hand recorded secrets over as they are (a warning is said on stderr).",
)
@click.option("--env-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="KEY=VALUE lines whose secret-looking values are redacted too.")  # fmt: skip
@click.option(
    "--max-bytes",
    type=click.IntRange(min=4096),
    default=32 * 1024,
    show_default=True,
    help="Largest result of a tool, in bytes of JSON (lists page, texts are cut).",
)
def mcp_command(
    db: Path | None, files: tuple[str, ...], no_redact: bool, env_file: Path | None,
    max_bytes: int,
) -> None:  # fmt: skip
    """Serve recordings to a coding agent: an MCP server over stdio, read-only.

    Tools: list_recordings, recording_summary, frames, frame, search, check, diff,
    conversation (Markdown of a turn) and method_stats. Every result is bounded and, by
    default, redacted with the bug-report redactor (see docs/bug-reports.md). Configure it in
    the agent as the command `acp-proxy mcp` (docs/mcp.md shows Claude Code and Zed).

    FILE: bundles (.acpbundle) or JSONL exports to serve instead of the database.
    """
    if importlib.util.find_spec("mcp") is None:
        report(MISSING_SDK)
        sys.exit(EXIT_USAGE)
    from acp_proxy.serve.mcp.copies import Copies
    from acp_proxy.serve.mcp.library import Library
    from acp_proxy.serve.mcp.server import build_server
    from acp_proxy.share.redaction_io import finder_for
    from acp_proxy.store.readers import open_for_reading
    from acp_proxy.store.refs import import_recording_files
    from acp_proxy.store.search import open_for_search

    try:
        path = import_recording_files(list(files)) if files else resolve_db(db)
        source, writable = open_for_search(path)
        finder = None if no_redact else finder_for(os.environ, env_file)
    except AcpProxyError as error:
        report(str(error))
        sys.exit(EXIT_USAGE)
    if no_redact:
        report("warning: --no-redact: tool results hold recorded secrets as they are")
    copies = Copies(source, finder)
    try:
        library = Library(
            copies, max_bytes, writable=writable, scanner=lambda: open_for_reading(path)
        )
        build_server(library).run("stdio")
    except KeyboardInterrupt:  # Ctrl-C in a terminal: the end, not an error
        pass
    finally:
        copies.close()
