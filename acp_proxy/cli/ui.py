"""The ``ui`` command: the live web inspector. Wiring only (see acp_proxy/serve/ui).

Rules:
- Needs the ``ui`` extra (Starlette, uvicorn): without it, one line saying how to get it, exit 2.
- REF picks the connection the page opens on; a bundle, JSONL export or cassette file is
  imported into a temporary database first (every episode of it is listed).
- The address, with its token, is said on stderr. ``--host`` other than loopback warns.
- Ctrl-C (SIGINT) stops it without a word more, exit status 130: the status a shell gives a
  program that Ctrl-C ended, as GNU tools and Python itself end on an unhandled interrupt, so
  that a script or supervisor can tell "stopped" from "finished" (a server has no work that
  finishes); never click's "Aborted!" and status 1, which would say it failed. SIGTERM ends it
  as the signal does (uvicorn shuts down, the inspector ends its checkers and deletes their
  files, then the signal takes its default course).
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.main import db_option, report, resolve_db
from acp_proxy.errors import AcpProxyError

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a program Ctrl-C ended
DATABASE_WAIT_S = 60.0


@click.command("ui")
@db_option
@click.argument("ref", required=False)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: any free port).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback is warned about.")  # fmt: skip
@click.option("--open/--no-open", "open_browser", default=None,
              help="Open the page in a browser [default: when run in a terminal].")  # fmt: skip
@click.option(
    "--watch-pid",
    type=int,
    hidden=True,
    help="Serve while this process lives; open on the connection it records.",
)
def ui_command(
    db: Path | None, ref: str | None, port: int, host: str, open_browser: bool | None,
    watch_pid: int | None,
) -> None:  # fmt: skip
    """Serve a live web inspector of the recordings on a local address.

    Shows the recordings (live ones update as frames arrive), each connection's timeline with
    chunk runs collapsed and playback, frame details with the schema's field descriptions and
    the check findings, session info, a sequence diagram, the conversation, performance
    (insights, a waterfall, latency per method and per turn), and an aligned diff of two
    recordings. Everything works from the keyboard: `?` in the page lists the keys. See
    docs/ui.md.

    REF (a connection id, session id, label, `last`, or a bundle / JSONL export / cassette
    file) is what the page opens on; without it the page opens on the list. The address,
    with the random token every request needs, is said on stderr. Ctrl-C stops it (exit
    status 130).
    """
    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        report(f"the ui needs {' and '.join(missing)}: pip install 'acp-proxy[ui]'")
        sys.exit(EXIT_USAGE)
    from acp_proxy.serve.ui.app import create_app
    from acp_proxy.serve.ui.security import Gate, allowed_hosts, new_token
    from acp_proxy.serve.ui.server import ServeOptions, address, serve
    from acp_proxy.serve.ui.state import Database, Inspector, load_schemas
    from acp_proxy.store.refs import open_ref

    initial: dict[str, Any] = {}
    if watch_pid is not None:
        _wait_for_database(resolve_db(db), watch_pid)
    try:
        db_path = resolve_db(db)
        if ref is not None:
            opened = open_ref(ref, db_path, episodes=True)
            db_path = opened.path
            initial = {"connection": opened.connection_id}
            if opened.from_file:
                initial["source"] = ref
            opened.db.close()
        database = Database(db_path)
    except AcpProxyError as error:
        report(str(error))
        sys.exit(EXIT_USAGE)
    if watch_pid is not None:
        initial["proxy_pid"] = watch_pid
    schemas, documents = load_schemas()
    inspector = Inspector(database, schemas, documents)
    token = new_token()

    def make_app(bound_host: str, bound_port: int) -> tuple[Any, str]:
        app = create_app(inspector, initial)
        hosts = allowed_hosts(bound_host, bound_port)
        gate = Gate(app, token, hosts, app.state.script_hashes)
        return gate, address(bound_host, bound_port, token)

    if open_browser is None:
        open_browser = sys.stdout.isatty() and watch_pid is None
    _close_before_ended_by(signal.SIGTERM, inspector)
    try:
        serve(make_app, ServeOptions(host, port, open_browser, watch_pid), report)
    except KeyboardInterrupt:  # Ctrl-C: stopped as asked, quietly (see the rules)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        inspector.close()  # its rule checkers' processes


def _close_before_ended_by(signum: int, inspector: Any) -> None:
    """Once uvicorn has shut down for ``signum`` it raises the signal again: close the
    inspector first (no ``finally`` runs when the signal's default action ends the process)."""

    def ended(number: int, _: Any) -> None:
        inspector.close()
        signal.signal(number, signal.SIG_DFL)
        signal.raise_signal(number)

    signal.signal(signum, ended)


def _wait_for_database(path: Path, pid: int) -> None:
    """Beside ``record``: its recorder process creates the database a moment after we start."""
    import os
    import time

    from acp_proxy.store.ui_reads import is_ready

    deadline = time.monotonic() + DATABASE_WAIT_S
    while time.monotonic() < deadline:
        if is_ready(path):
            return
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit(0)  # the recording is over before it began
        except PermissionError:
            pass
        time.sleep(0.05)
