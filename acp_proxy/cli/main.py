"""The ``acp-proxy`` command line: arguments, paths, environment, exit codes. Wiring only.

Rules:
- In ``record`` (and later ``replay``) stdout is the protocol channel: nothing here prints to
  it. The proxy's own words go to stderr, one line each, prefixed ``acp-proxy:``.
- User mistakes (a bad path, an unknown recording) end with one line on stderr and exit 2 or 1,
  never a traceback. ``AcpProxyError`` is the only exception turned into a message here.
- Every command that reads or writes recordings takes ``--db`` and honours ``ACP_PROXY_DB``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from acp_proxy import __version__
from acp_proxy.cli.endings import EXIT_USAGE
from acp_proxy.cli.helptext import EXAMPLES, SECTIONS, UnbrokenContext, unbroken
from acp_proxy.paths import DB_ENV, default_db_path
from acp_proxy.record.defaults import DEFAULT_GRACE, DEFAULT_MAX_WAIT
from acp_proxy.stderr import report

if TYPE_CHECKING:
    from acp_proxy.store.refs import Opened

__all__ = [
    "EXIT_USAGE",
    "LAZY_COMMANDS",
    "db_option",
    "main",
    "open_ref",
    "report",
    "require_otel",
    "resolve_db",
]

F = TypeVar("F")


# Commands defined in other modules, loaded only when used (``record`` must start fast):
# name -> "module:attribute". Add new command modules here.
LAZY_COMMANDS: dict[str, str] = {
    "check": "acp_proxy.cli.check:check",
    "diff": "acp_proxy.cli.check:diff",
    "schemas": "acp_proxy.cli.check:schemas",
    "ls": "acp_proxy.cli.inspect:ls_command",
    "show": "acp_proxy.cli.inspect:show_command",
    "tail": "acp_proxy.cli.inspect:tail_command",
    "stats": "acp_proxy.cli.inspect:stats_command",
    "search": "acp_proxy.cli.search:search_command",
    "mcp": "acp_proxy.cli.mcp:mcp_command",
    "export": "acp_proxy.cli.export:export_command",
    "import": "acp_proxy.cli.export:import_command",
    "datasette-metadata": "acp_proxy.cli.export:datasette_metadata_command",
    "replay": "acp_proxy.cli.replay:replay_command",
    "redact": "acp_proxy.cli.share:redact_command",
    "bundle": "acp_proxy.cli.share:bundle_command",
    "ui": "acp_proxy.cli.ui:ui_command",
    "delete": "acp_proxy.cli.tidy:delete_command",
    "prune": "acp_proxy.cli.tidy:prune_command",
    "wrap": "acp_proxy.cli.wrap:wrap_command",
    "unwrap": "acp_proxy.cli.wrap:unwrap_command",
}


class _Commands(click.Group):
    """The top-level group.

    Turns acp-proxy's own errors into one line on stderr: exit status 2 for a REF (or its
    database or file) that cannot be used, like every usage error, 1 for other trouble. A
    database that turns out damaged while it is read is such a REF too. Loads the commands of
    ``LAZY_COMMANDS`` on first use.
    """

    context_class = UnbrokenContext

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order of the help's map (helptext.SECTIONS)."""
        mapped = [name for _, commands in SECTIONS for name, _ in commands]
        others = sorted({*super().list_commands(ctx), *LAZY_COMMANDS} - set(mapped))
        return mapped + others

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(name)
        if target is None:
            found = super().get_command(ctx, name)
            return None if found is None else unbroken(found)
        import importlib

        module_name, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return unbroken(command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands by what they are for, each with its one-line summary (no imports)."""
        width = max(len(name) for _, commands in SECTIONS for name, _ in commands)
        for title, commands in SECTIONS:
            with formatter.section(title):
                formatter.write_dl([(name.ljust(width), summary) for name, summary in commands])

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        width = max(len(command) for command, _ in EXAMPLES)
        with formatter.section("Examples"):
            for command, what in EXAMPLES:
                formatter.write(f"{' ' * formatter.current_indent}{command:<{width}}  # {what}\n")
        formatter.write_paragraph()
        formatter.write_text("`acp-proxy COMMAND --help` says more; docs/cli.md has every command.")

    def invoke(self, ctx: click.Context) -> Any:
        from acp_proxy.cli.endings import said_and_status

        try:
            return super().invoke(ctx)
        except Exception as error:
            status = said_and_status(error)
            if status is None:
                raise
            ctx.exit(status)


def _db_option() -> click.Option:
    return click.Option(
        ["--db"],
        type=click.Path(dir_okay=False, path_type=Path),
        envvar=DB_ENV,
        show_envvar=True,
        default=None,
        help=f"Recording database [default: {_home_as_tilde(str(default_db_path()))}].",
    )


def _home_as_tilde(path: str) -> str:
    """``path`` with the home folder written ``~``: shorter, and a shell still expands it."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


def db_option(function: F) -> F:
    """Add ``--db PATH`` (env ``ACP_PROXY_DB``) to a command."""
    params = getattr(function, "__click_params__", [])
    params.append(_db_option())
    function.__click_params__ = params  # type: ignore[attr-defined]
    return function


def resolve_db(db: Path | None) -> Path:
    return db if db is not None else default_db_path()


def open_ref(
    db: Path | None, ref: str | None, *, episodes: bool = False, sessions: bool = False
) -> Opened:
    """The REF opener (store/refs.py) for a command's ``--db`` and REF argument."""
    from acp_proxy.store.refs import open_ref as opener

    return opener(ref, resolve_db(db), episodes=episodes, sessions=sessions)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="acp-proxy")
def main() -> None:
    """See, capture and replay Agent Client Protocol (ACP) traffic.

    Put `acp-proxy record --` in front of an agent command in your editor's agent settings;
    every frame both ways is then recorded in SQLite while the bytes pass through unchanged.
    """


def _with_listen(name: str, help_text: str, **settings: Any) -> click.Option:
    """An option of ``record --listen`` alone (a usage error without it)."""
    if "is_flag" not in settings:
        settings.setdefault("type", click.Path(exists=True, dir_okay=False))
        settings.setdefault("metavar", "FILE")
    return click.Option([name], help=f"With --listen: {help_text}", **settings)


# record --listen's own options, declared once: ``_listen_options`` adds them to ``record``,
# ``record`` refuses each without --listen, and ``_listen`` takes their values by name.
_LISTEN_ONLY = (
    _with_listen("--upstream", "the remote agent's endpoint, e.g. http://127.0.0.1:8000/acp "
                 "(https is verified against the system's CAs or --upstream-ca).",
                 type=None, metavar="URL"),
    _with_listen("--upstream-ca", "verify an https upstream against the CA certificates in "
                 "FILE (PEM) instead of the system's."),
    _with_listen("--cert", "serve TLS (https, h2, wss) with this certificate chain (PEM); "
                 "needs --key."),
    _with_listen("--key", "the private key (PEM) of --cert."),
    _with_listen("--record-credentials", "also record the values of Authorization, Cookie "
                 "and other credential headers (never recorded otherwise: the recording shows "
                 "only that they were there). Bundles and redacted exports still remove them.",
                 is_flag=True),
    _with_listen("--idle-timeout", "end a Streamable HTTP connection that has had no request "
                 "and no open event stream for SECONDS (its client went away without DELETE): "
                 "recorded as dropped, with why, and the upstream told (DELETE); 0 never. "
                 "Default 300.", type=click.FloatRange(min=0), metavar="SECONDS"),
    _with_listen("--client-stall", "a client that reads an event stream or a WebSocket more "
                 "slowly than the upstream sends holds the upstream back once 8 MiB wait for "
                 "it; end it when it takes nothing for SECONDS meanwhile. Default 30.",
                 type=click.FloatRange(min=0, min_open=True), metavar="SECONDS"),
)  # fmt: skip


def _listen_options(function: F) -> F:
    """Add ``_LISTEN_ONLY`` where this decorator stands, in their order."""
    params = getattr(function, "__click_params__", [])
    params.extend(reversed(_LISTEN_ONLY))  # click reverses the decorators' list
    function.__click_params__ = params  # type: ignore[attr-defined]
    return function


@main.command(
    context_settings={"allow_interspersed_args": False},
)
@db_option
@click.option("--label", help="A name for this recording, usable wherever a REF is asked for.")
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds the agent gets to exit after the client closes its stdin, before SIGTERM "
    "(and as long again before SIGKILL).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Apply the spec rules (see `acp-proxy check`) to every frame as it is recorded: "
    "findings are said on stderr as they happen and stored in the recording.",
)
@click.option(
    "--otlp",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[URL]",
    help="Also send the conversation as an OpenTelemetry trace while it is recorded, over "
    "OTLP/HTTP to URL (a collector's base URL, e.g. http://localhost:4318) or, alone, to "
    "where the OTEL_EXPORTER_OTLP_* variables say. Needs the `otel` extra. See docs/otel.md.",
)
@click.option(
    "--otlp-content",
    is_flag=True,
    help="With --otlp: include prompt text, agent output, tool input and output and file "
    "contents in the spans, passed through the bug-report redactor first.",
)
@click.option(
    "--max-recorder-wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_MAX_WAIT,
    show_default=True,
    metavar="SECONDS",
    help="Longest forwarding waits for a recorder that is behind (stopped, starved, its "
    "temporary folder full); past it, frames are left out of the recording and counted, and "
    "forwarding goes on. `inf`: never leave a frame out, wait as long as it takes.",
)
@click.option(
    "--ui",
    is_flag=True,
    help="Also serve the web inspector (`acp-proxy ui`) on a free loopback port, in a process "
    "of its own that only reads the database; its address is said on stderr.",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Be a reverse proxy for a remote agent instead: serve its endpoint (Streamable HTTP "
    "over HTTP/1.1 and h2c, and WebSocket) on HOST:PORT (loopback unless told otherwise; port "
    "0 picks a free one, said on stderr) and record every connection. Needs --upstream and the "
    "`remote` extra. See docs/remote.md.",
)
@_listen_options
@click.option(
    "--connect",
    metavar="URL",
    help="Be the agent yourself, for a remote one: bridge the client on stdin and stdout to "
    "the ACP endpoint at URL (http(s):// for Streamable HTTP, ws(s):// for WebSocket), "
    "recorded like a stdio agent. See docs/remote.md.",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="With --connect: send this header on every request (repeatable). $VAR and ${VAR} in "
    "VALUE come from the environment, so that secrets stay off command lines; headers are "
    "never recorded.",
)
@click.argument("agent_command", nargs=-1, type=click.UNPROCESSED)
def record(
    db: Path | None,
    label: str | None,
    grace: float,
    check: bool,
    otlp: str | None,
    otlp_content: bool,
    max_recorder_wait: float,
    ui: bool,
    listen: str | None,
    connect: str | None,
    headers: tuple[str, ...],
    agent_command: tuple[str, ...],
    **listening: Any,
) -> None:
    """Run AGENT_COMMAND behind the proxy and record the conversation.

    Use it as the agent command of an ACP client:

        acp-proxy record -- my-agent --its-flags

    Client stdin goes to the agent's stdin, the agent's stdout to the client and its stderr to
    stderr, byte for byte. Everything is recorded, stderr lines included. The exit status is
    the agent's (128+N if signal N ended it; 127 or 126 if it could not start).

    With --connect URL instead of a command, the proxy is the client's agent and a remote ACP
    client to URL; it exits 0 when the client ends, 1 when the remote end fails.

    For a remote agent, serve its endpoint and record every client that connects:

        acp-proxy record --listen 127.0.0.1:0 --upstream http://127.0.0.1:8000/acp
    """
    from acp_proxy.cli.sinks import recorder_sinks
    from acp_proxy.record.session import RecordOptions
    from acp_proxy.record.session import record as run_record

    if otlp_content and otlp is None:
        raise click.UsageError("--otlp-content needs --otlp")
    if otlp is not None:
        require_otel()
    if listen is not None:
        if agent_command:
            raise click.UsageError("--listen records a remote agent: give no agent command")
        if connect is not None or headers:
            raise click.UsageError("--listen and --connect do not go together")
        sys.exit(_listen(
            listen, resolve_db(db), listening, label=label, check=check, otlp=otlp,
            otlp_content=otlp_content, max_recorder_wait=max_recorder_wait, ui=ui,
        ))  # fmt: skip
    for option in _LISTEN_ONLY:
        if listening[option.name or ""] not in (None, False):
            raise click.UsageError(f"{option.opts[0]} needs --listen")
    if connect is not None or headers:
        _record_bridge(
            db, label, grace, check, otlp, otlp_content, max_recorder_wait, ui, connect,
            headers, agent_command,
        )  # fmt: skip
    if not agent_command:
        raise click.UsageError(
            "give the agent command (after --), or --connect URL, or --listen HOST:PORT"
        )
    options = RecordOptions(
        agent_command, resolve_db(db), label=label, grace=grace, check=check, otlp=otlp,
        otlp_content=otlp_content, max_recorder_wait=max_recorder_wait, ui=ui,
        sinks=recorder_sinks,
    )  # fmt: skip
    sys.exit(run_record(options, report))


def _listen(
    listen: str, db_path: Path, listening: dict[str, Any], *, label: str | None, check: bool,
    otlp: str | None, otlp_content: bool, max_recorder_wait: float, ui: bool,
) -> int:  # fmt: skip
    """``record --listen``: check the command line, then serve (remote/serve.py).
    ``listening``: the values of ``_LISTEN_ONLY``, by name."""
    from acp_proxy.remote import missing_extra

    upstream = listening["upstream"]
    if upstream is None:
        raise click.UsageError("--listen needs --upstream URL (the remote agent's endpoint)")
    if (listening["cert"] is None) != (listening["key"] is None):
        raise click.UsageError("--cert and --key go together")
    missing = missing_extra()
    if missing is not None:
        report(missing)
        sys.exit(2)
    from acp_proxy.remote.listen_address import AddressError, parse_listen
    from acp_proxy.remote.serve import ListenOptions, run
    from acp_proxy.remote.upstream import BadUpstream, Endpoint

    try:
        Endpoint.parse(upstream)
        parse_listen(listen)
    except (BadUpstream, AddressError) as error:
        raise click.UsageError(str(error)) from None
    from acp_proxy.cli.sinks import recorder_sinks

    options = ListenOptions(
        listen=listen, db_path=db_path, label=label, check=check, sinks=recorder_sinks,
        otlp=None if otlp is None else {"endpoint": otlp or None, "content": otlp_content},
        max_recorder_wait=max_recorder_wait, ui=ui, **listening,
    )  # fmt: skip
    try:
        return run(options, report)
    except AddressError as error:
        report(str(error))
        return 2


def _how_to_run(program: str) -> str:
    """``program`` as the user can type it: its name when it is on PATH, else its path beside
    this interpreter (a virtualenv's ``bin`` that is not activated), relative when shorter."""
    import shutil

    beside = Path(sys.executable).parent / program
    if shutil.which(program) or not beside.exists():
        return program
    relative = os.path.relpath(beside)
    return (
        relative
        if len(relative) < len(str(beside)) and not relative.startswith("..")
        else str(beside)
    )


def _record_bridge(
    db: Path | None, label: str | None, grace: float, check: bool, otlp: str | None,
    otlp_content: bool, max_recorder_wait: float, ui: bool, connect: str | None,
    headers: tuple[str, ...], agent_command: tuple[str, ...],
) -> None:  # fmt: skip
    """``record --connect URL``: the stdio bridge to a remote agent (remote/bridge.py); exits."""
    import os

    from acp_proxy.remote import missing_extra
    from acp_proxy.remote.bridge_headers import HeaderError, parse_headers, transport_of

    if connect is None:
        raise click.UsageError("--header needs --connect")
    if agent_command:
        raise click.UsageError("--connect takes no agent command")
    if ui:
        raise click.UsageError("--ui does not apply to --connect")
    try:
        transport = transport_of(connect)
        parsed = parse_headers(headers, os.environ)
    except HeaderError as error:
        raise click.UsageError(str(error)) from None
    missing = missing_extra()
    if missing is not None:
        report(missing)
        sys.exit(2)
    from acp_proxy.cli.sinks import recorder_sinks
    from acp_proxy.remote.bridge_session import BridgeOptions, record_bridge

    otlp_settings: dict[str, object] | None = None
    if otlp is not None:
        otlp_settings = {"endpoint": otlp or None, "content": otlp_content}
    options = BridgeOptions(
        connect, transport, parsed, resolve_db(db), label=label, grace=grace, check=check,
        otlp=otlp_settings, max_recorder_wait=max_recorder_wait, sinks=recorder_sinks,
    )  # fmt: skip
    sys.exit(record_bridge(options, report))


def require_otel() -> None:
    """Exit with one line (status 2) when the ``otel`` extra is not installed."""
    from acp_proxy.otel import missing_extra

    missing = missing_extra()
    if missing is not None:
        report(missing)
        sys.exit(2)


@main.command()
@db_option
@click.option("--label", default="demo", show_default=True, help="Label of the demo recording.")
@click.option("--prompt", "prompts", multiple=True, help="What the demo client says (repeatable).")
def demo(db: Path | None, label: str, prompts: tuple[str, ...]) -> None:
    """Record a real ACP conversation, then say where it is and what it holds.

    Runs a small client and agent written on the official ACP Python SDK, with
    `acp-proxy record` between them exactly as an editor would run it. The client's view of the
    conversation is printed first, then a summary read back from the database. Needs the
    `demo` extra (`pip install 'acp-proxy[demo]'`).
    """
    import asyncio
    import importlib.util

    if importlib.util.find_spec("acp") is None:
        report("the demo needs the ACP Python SDK: pip install 'acp-proxy[demo]'")
        sys.exit(1)
    from acp_proxy.demo import AGENT_MODULE
    from acp_proxy.demo.client import run_demo_client
    from acp_proxy.inspect.summary import render_summary
    from acp_proxy.store.database import connect
    from acp_proxy.store.refs import resolve_ref
    from acp_proxy.store.summary import summarize

    db_path = resolve_db(db)
    agent = [sys.executable, "-m", AGENT_MODULE]
    proxied = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db_path)]
    proxied += ["--label", label, "--", *agent]
    attached = str(Path(__file__).parent.parent / "demo" / "agent.py")
    shown = ["acp-proxy", *proxied[3:-3], "python", "-m", AGENT_MODULE]
    click.echo(f"demo client -> {' '.join(shown)}\n")
    status = asyncio.run(run_demo_client(proxied, list(prompts), attached, sys.stdout))
    sys.stdout.flush()
    database = connect(db_path, create=False)
    summary = summarize(database, resolve_ref(database, label))
    has_datasette = importlib.util.find_spec("datasette") is not None
    programs = {name: _how_to_run(name) for name in ("sqlite-utils", "datasette")}
    said = render_summary(summary, db_path, datasette_installed=has_datasette, programs=programs)
    click.echo("\n" + said, nl=False)
    sys.exit(status)
