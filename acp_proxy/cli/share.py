"""``redact`` and ``bundle``: share a recording safely. Wiring only (see redact.py, bundle.py).

Rules:
- Secrets are detected with this user's environment (``os.environ``, plus ``--env-file``),
  home folder and user name: recordings do not store the agent's environment.
- Output is verified before it is written (a fresh detect-only pass over what would be
  written); if anything still looks secret, nothing is written and the command exits 1 listing
  what and where (a prefix and a length, never the secret), unless ``--force``.
- ``--verify FILE`` only scans: exit 1 listing what still looks secret, 0 when clean.
- Files are created readable by their owner only; the placeholder map goes only to
  ``--keep-map FILE``, never into the shared output.
- Errors are ``AcpProxyError``: one line on stderr, exit status 1; an unusable REF or
  ``--verify`` file (not a bundle or export, damaged): exit status 2.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from acp_proxy.cli.main import db_option, open_ref, report
from acp_proxy.errors import AcpProxyError
from acp_proxy.plural import counted

if TYPE_CHECKING:
    from acp_proxy.share.redact import Redactor

ENV_FILE_HELP = (
    "Also treat the secret-looking variables of this file (KEY=VALUE lines, e.g. the agent's "
    ".env) as secrets. The current environment is always used."
)


def refuse(leaks: list[object], force: bool, what: str) -> None:
    """Report leaks; exit 1 unless ``force``."""
    from acp_proxy.share.verify import Leak

    for leak in leaks:
        assert isinstance(leak, Leak)
        report(f"still looks secret: {leak.shown()}")
    if leaks and not force:
        report(f"{counted(len(leaks), 'finding')}: {what} not written (--force writes it anyway)")
        sys.exit(1)


def redacted_jsonl(
    db: Path | None, ref: str | None, drop_contents: bool, env_file: Path | None
) -> tuple[bytes, Redactor, list[object]]:
    """The redacted JSONL export of REF, its Redactor and what verification found."""
    from acp_proxy.share.redact import Redactor
    from acp_proxy.share.redaction_io import finder_for, redacted_export
    from acp_proxy.share.verify import Verifier

    opened = open_ref(db, ref)
    database, connection_id = opened.db, opened.connection_id
    finder = finder_for(os.environ, env_file)
    redactor = Redactor(finder, drop_contents=drop_contents)
    out = io.BytesIO()
    leaks = redacted_export(database, connection_id, redactor, Verifier(finder), out)
    return out.getvalue(), redactor, list(leaks)


def common_options(function: click.decorators.FC) -> click.decorators.FC:
    for option in reversed([
        click.option("--drop-contents", is_flag=True, help="Also replace file contents "
                     "(fs/read_text_file results, fs/write_text_file, embedded resources, diffs), "
                     "terminal output and image/audio data, keeping the JSON shape."),
        click.option("--keep-map", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write the placeholder -> original value map here (mode 0600). "
                     "Keep it to yourself: it holds every secret."),
        click.option("--env-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help=ENV_FILE_HELP),
        click.option("--force", is_flag=True,
                     help="Write the output even if verification still finds something."),
    ]):  # fmt: skip
        function = option(function)
    return function


@click.command("redact")
@db_option
@click.argument("ref", required=False)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the redacted JSONL export here instead of stdout.")  # fmt: skip
@common_options
@click.option("--verify", "verify_path", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="Only scan this export (JSONL) or bundle for anything that "
              "still looks secret: exit 1 listing it, 0 when clean.")  # fmt: skip
def redact_command(
    db: Path | None, ref: str | None, output: Path | None, drop_contents: bool,
    keep_map: Path | None, env_file: Path | None, force: bool, verify_path: Path | None,
) -> None:  # fmt: skip
    """Write a recording as a JSONL export with its secrets replaced by placeholders.

    Each distinct secret becomes `[redacted:KIND:N]` (the same value, the same placeholder
    everywhere), so the export stays replayable; see docs/bug-reports.md for what is found.
    Secret-looking variables of the current environment (and --env-file) count as secrets.
    The output is verified before it is written. `acp-proxy import` reads it back.

    REF: a connection id, session id, label, uid, `last` (the default), or a bundle/export file.
    """
    if verify_path is not None:
        _verify(verify_path, env_file, ref)
        return
    data, redactor, leaks = redacted_jsonl(db, ref, drop_contents, env_file)
    refuse(leaks, force, "redacted export")
    write_output(output, data)
    _keep(keep_map, redactor)


def _verify(path: Path, env_file: Path | None, ref: str | None) -> None:
    from acp_proxy.share.redaction_io import finder_for, verify_file
    from acp_proxy.share.verify import Verifier

    if ref is not None:
        raise click.UsageError("give either REF (to redact) or --verify FILE, not both")
    leaks = verify_file(path, Verifier(finder_for(os.environ, env_file)))
    from acp_proxy.display import visible

    for leak in leaks:
        click.echo(visible(leak.shown()))
    if leaks:
        verb = "looks" if len(leaks) == 1 else "look"
        click.echo(f"{counted(len(leaks), 'thing')} in {path} still {verb} secret")
        sys.exit(1)
    click.echo(f"clean: nothing in {path} looks secret")


def write_output(output: Path | None, data: bytes) -> None:
    from acp_proxy.share.redaction_io import private_output

    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with private_output(output) as out:
        out.write(data)


def _keep(keep_map: Path | None, redactor: object) -> None:
    from acp_proxy.share.redact import Redactor
    from acp_proxy.share.redaction_io import write_map

    assert isinstance(redactor, Redactor)
    counts = ", ".join(f"{k} {n}" for k, n in sorted(redactor.counts.items())) or "nothing"
    report(f"redacted: {counts}")
    if keep_map is not None:
        write_map(keep_map, redactor)
        report(f"placeholder map (keep it private) in {keep_map}")


@click.command("bundle")
@db_option
@click.argument("ref", required=False)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The bundle to write (e.g. report.acpbundle).")  # fmt: skip
@common_options
@click.option("--schema-dir", type=click.Path(file_okay=False, path_type=Path),
              envvar="ACP_PROXY_SCHEMAS", show_envvar=True,
              help="ACP schemas for `check` [default: newest `schemas fetch`; without any, "
              "schema validation is skipped and the manifest says so].")  # fmt: skip
def bundle_command(
    db: Path | None, ref: str | None, output: Path, drop_contents: bool, keep_map: Path | None,
    env_file: Path | None, force: bool, schema_dir: Path | None,
) -> None:  # fmt: skip
    """Write a bug-report bundle: redacted frames, manifest, check findings and transcript.

    One zip file to attach to an issue. `show`, `export`, `check` and `replay` accept it as a
    REF; `acp-proxy import` takes its frames.jsonl. Everything in it comes from the redacted
    frames, and the whole bundle is verified before it is written.

    REF: a connection id, session id, label, uid, `last` (the default), or a bundle/export file.
    """
    import orjson

    from acp_proxy.share.bundle import build_members, write_bundle
    from acp_proxy.share.redaction_io import verify_member
    from acp_proxy.share.verify import Verifier

    data, redactor, leaks = redacted_jsonl(db, ref, drop_contents, env_file)
    header = orjson.loads(data.split(b"\n", 1)[0])
    try:
        members = build_members(data, header.get("redaction", {}), schema_dir, redactor.text)
    except AcpProxyError as error:
        raise AcpProxyError(f"cannot build the bundle: {error}") from error
    from acp_proxy.share.redaction_io import finder_for

    verifier = Verifier(finder_for(os.environ, env_file))
    for name, content in members.items():
        if name != "frames.jsonl":  # verified as it was produced
            leaks += verify_member(name, content, verifier)
    refuse(leaks, force, "bundle")
    from acp_proxy.share.redaction_io import private_output

    with private_output(output) as out:
        write_bundle(out, members)
    _keep(keep_map, redactor)
    click.echo(f"wrote {output}")
