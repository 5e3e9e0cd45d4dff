"""The I/O around redaction: what the detectors are told, streaming a redacted export, files.

Rules:
- Recordings do not store the agent's environment. The environment secrets are read from the
  environment ``redact`` runs in (``os.environ``) plus ``--env-file`` (``KEY=VALUE`` lines,
  ``export`` prefixes and quotes allowed); the home folder and user name are this user's.
- A redacted export is written frames first (into a spool), so that its header can carry the
  byte totals and the redaction summary of the redacted frames; every line is verified (a
  fresh detect-only pass, see verify.py) as it is produced. A remote connection's transport
  facts go in the header too, redacted (share/redact_transport.py).
- Output files are created readable by their owner only (0600) and appear whole: written to a
  temporary file beside the target, then renamed. The placeholder map is only ever written to
  the file the user names.
"""

from __future__ import annotations

import contextlib
import getpass
import itertools
import os
import shlex
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

import orjson

from acp_proxy import __version__
from acp_proxy.errors import AcpProxyError, UnreadableRecording
from acp_proxy.share.redact import Redactor
from acp_proxy.share.redact_transport import redact_transport
from acp_proxy.share.secrets import Finder, environment_secrets
from acp_proxy.share.verify import Leak, Verifier
from acp_proxy.store import readers as store_read
from acp_proxy.store.jsonl import FORMAT, frame_line, header_line
from acp_proxy.store.transport_facts import exported_transport

SPOOL_BYTES = 32 << 20
PLACEHOLDER_FORM = "[redacted:KIND:N]"


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, ``export KEY=...`` and quoted values allowed)."""
    found: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as error:
        raise AcpProxyError(f"cannot read {path}: {error}") from error
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        name, _, value = stripped.removeprefix("export ").partition("=")
        value = value.strip()
        if value[:1] in ("'", '"'):
            with contextlib.suppress(ValueError):
                value = "".join(shlex.split(value))
        found[name.strip()] = value
    return found


def finder_for(environ: Mapping[str, str], env_file: Path | None = None) -> Finder:
    """The detectors for this user: their secret-looking variables, home folder and name."""
    values = environment_secrets(environ)
    if env_file is not None:
        values.update(environment_secrets(read_env_file(env_file)))
    home = environ.get("HOME") or os.path.expanduser("~")
    user = environ.get("USER") or environ.get("LOGNAME")
    if not user:
        with contextlib.suppress(Exception):
            user = getpass.getuser()
    return Finder(values, home=home, user=user)


def redacted_export(
    db: store_read.Database, connection_id: int, redactor: Redactor, verifier: Verifier,
    out: BinaryIO, progress: Callable[[int], None] = lambda n: None,
) -> list[Leak]:  # fmt: skip
    """Write one connection's redacted JSONL export to ``out``; what verification found."""
    connection = {
        k: v for k, v in store_read.connection_record(db, connection_id).items() if k != "id"
    }
    changed_connection = redactor.connection(connection)
    leaks: list[Leak] = []
    changed_frames = 0
    with tempfile.SpooledTemporaryFile(SPOOL_BYTES) as spool:
        for number, record in enumerate(store_read.export_rows(db, connection_id), start=2):
            paths = redactor.frame(record)
            changed_frames += bool(paths)
            line = frame_line(record, paths)
            leaks += verifier.jsonl_line("jsonl", number, line)
            spool.write(line)
            progress(1)
        redactor.finish_connection(connection)
        transport = exported_transport(db, connection_id)
        extra: dict[str, Any] = {}
        if transport is not None:
            changed_connection += redact_transport(redactor, transport)
            extra["transport"] = transport
        summary = redaction_summary(redactor, changed_frames, changed_connection)
        line = header_line(connection, **extra, redaction=summary)
        leaks = verifier.jsonl_line("jsonl", 1, line) + leaks
        out.write(line)
        spool.seek(0)
        while chunk := spool.read(1 << 20):
            out.write(chunk)
    return leaks


def redaction_summary(redactor: Redactor, frames: int, connection: list[str]) -> dict[str, Any]:
    return {
        "by": f"acp-proxy {__version__}", "placeholder": PLACEHOLDER_FORM,
        "placeholders": dict(sorted(redactor.counts.items())), "frames_changed": frames,
        "connection_changed": connection, "drop_contents": redactor.drop_contents,
    }  # fmt: skip


@contextlib.contextmanager
def private_output(path: Path) -> Iterator[IO[bytes]]:
    """A file that becomes ``path`` (mode 0600) only when the block ends without an error."""
    folder = path.parent if str(path.parent) else Path()
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    except OSError as error:
        raise AcpProxyError(f"cannot write {path}: {error}") from error
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except OSError as error:
        raise AcpProxyError(f"cannot write {path}: {error}") from error
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def write_map(path: Path, redactor: Redactor) -> None:
    """The placeholder -> value map, for the user's eyes only (0600), never in shared output."""
    document = {
        "format": "acp-proxy-redaction-map", "version": 1,
        "placeholders": {p: v for v, p in redactor.mapping.items()},
    }  # fmt: skip
    with private_output(path) as out:
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def verify_file(path: Path, verifier: Verifier) -> list[Leak]:
    """Scan an export (JSONL) or a bundle (zip: every member) for anything that looks secret.

    Only a real export or bundle is scanned (a clean answer about anything else would be a
    lie): a bundle is checked as every reader checks it (store/recording_files.py: manifest,
    members, bounds); an export must open with its header line. Everything is streamed line
    by line under the recording files' line bound: a line past it is refused, never called
    clean.
    """
    from acp_proxy.store.recording_files import file_lines, member_lines, open_bundle, read_member

    if zipfile.is_zipfile(path):
        leaks: list[Leak] = []
        bundle, members, _ = open_bundle(path)
        with bundle:
            for name, info in members.items():
                if name.endswith(".json"):
                    leaks += verifier.json_document(name, read_member(path, bundle, info))
                else:
                    leaks += verify_lines(name, member_lines(path, bundle, info), verifier)
        return leaks
    if path.suffix in (".acpbundle", ".zip"):
        raise UnreadableRecording(f"{path}: not a readable bundle (not a zip file, or truncated)")
    lines = file_lines(path)
    first = next(lines, b"")
    if not _is_export(first):
        raise UnreadableRecording(f"{path}: not an acp-proxy JSONL export or bundle")
    return verify_lines(path.name, itertools.chain([first], lines), verifier, jsonl=True)


def _is_export(first: bytes) -> bool:
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return isinstance(header, dict) and header.get("format") == FORMAT


def verify_member(name: str, data: bytes, verifier: Verifier, *, jsonl: bool = False) -> list[Leak]:
    """Leaks in one file or member held whole (output acp-proxy itself just wrote)."""
    if name.endswith(".json") and not jsonl:
        return verifier.json_document(name, data)
    return verify_lines(name, data.splitlines(keepends=True), verifier, jsonl=jsonl)


def verify_lines(
    name: str, lines: Iterable[bytes], verifier: Verifier, *, jsonl: bool = False
) -> list[Leak]:
    """Leaks in the lines of one file or member (JSONL when ``jsonl`` or named ``.jsonl``)."""
    leaks: list[Leak] = []
    as_jsonl = jsonl or name.endswith(".jsonl")
    for number, line in enumerate(lines, start=1):
        if as_jsonl:
            if line.strip():
                leaks += verifier.jsonl_line(name, number, line.rstrip(b"\r\n"))
        else:
            leaks += verifier.text(name, line.decode("utf-8", "surrogateescape"), number)
    return leaks
