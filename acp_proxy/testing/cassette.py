"""Cassettes: recorded connections (episodes) kept as a JSONL export file next to the tests.

Rules:
- A cassette is the project's JSONL export (docs/recording-format.md), or several of them one
  after the other, one per episode (cassette_episodes.py): ``acp-proxy import`` reads every
  episode back into any database, and ``replay`` and ``replay --to-agent`` take it as a REF.
- ``exported`` is one connection of a scratch database as export bytes, redacted by default
  with the bug-report redaction (redact.py: placeholders ``[redacted:KIND:N]``, which replay
  matches); when verification still finds something that looks secret, ``CassetteError`` says
  what and nothing is written.
- ``save`` writes the last connection of a scratch database as the whole cassette; ``append``
  adds an episode after the bytes already there, which stay as they are. Either way the file
  is replaced whole (written beside, renamed).
- ``outcome`` reads how a run recorded in a scratch database ended (its exit code and the
  summary it wrote on stderr): the first connection, which is the run's own; a replay that
  went live records the live conversation after it (``later``).
- No pytest here: pytest_plugin.py uses these.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from acp_proxy.errors import AcpProxyError
from acp_proxy.inspect.export import export
from acp_proxy.store import readers as store_read
from acp_proxy.store.frames import all_connections, scope


class CassetteError(AcpProxyError):
    """A cassette cannot be written or its run cannot be read."""


@dataclass(frozen=True, slots=True)
class Outcome:
    exit_code: int | None
    stderr: str  # what the run wrote on stderr (a replay's summary), decoded


def _open(db_path: Path, ref: str = "last") -> tuple[store_read.Database, int]:
    if not db_path.exists():
        raise CassetteError("nothing was recorded (the command was never run)")
    db = store_read.open_for_reading(db_path)
    try:
        return db, scope(db, ref).connection_id
    except AcpProxyError as error:
        db.close()
        raise CassetteError(f"nothing was recorded: {error}") from error


def save(db_path: Path, cassette: Path, *, redact: bool = True) -> None:
    """Write the last connection of ``db_path`` as the whole ``cassette``."""
    _replace(cassette, exported(db_path, "last", cassette, redact=redact))


def append(cassette: Path, episode: bytes) -> None:
    """Add ``episode`` (export bytes) after the episodes ``cassette`` holds."""
    held = cassette.read_bytes()
    if held and not held.endswith(b"\n"):
        held += b"\n"
    _replace(cassette, held + episode)


def _replace(cassette: Path, data: bytes) -> None:
    cassette.parent.mkdir(parents=True, exist_ok=True)
    scratch = cassette.with_name(f".{cassette.name}.tmp")
    scratch.write_bytes(data)
    scratch.replace(cassette)


def exported(db_path: Path, ref: str, cassette: Path, *, redact: bool = True) -> bytes:
    """Connection ``ref`` of ``db_path`` as export bytes, redacted unless told not to."""
    db, connection_id = _open(db_path, ref)
    out = io.BytesIO()
    try:
        if redact:
            from acp_proxy.share.redact import Redactor
            from acp_proxy.share.redaction_io import finder_for, redacted_export
            from acp_proxy.share.verify import Verifier

            finder = finder_for(os.environ)
            leaks = redacted_export(db, connection_id, Redactor(finder), Verifier(finder), out)
            if leaks:
                shown = "; ".join(leak.shown() for leak in leaks[:3])
                raise CassetteError(f"{cassette} not written: still looks secret: {shown}")
        else:
            export(db, connection_id, "jsonl", out)
    finally:
        db.close()
    return out.getvalue()


def later(db_path: Path) -> list[int]:
    """The connections recorded after the run's own (a replay's live part)."""
    db, first = _open(db_path, "1")
    try:
        return [c for c in all_connections(db) if c > first]
    finally:
        db.close()


def outcome(db_path: Path) -> Outcome:
    """How the run recorded first in ``db_path`` ended."""
    db, connection_id = _open(db_path, "1")
    try:
        code = store_read.connection_record(db, connection_id).get("exit_code")
        lines = [
            bytes(row["raw"]).decode("utf-8", "replace")
            for row in store_read.export_rows(db, connection_id)
            if row["direction"] == "stderr"
        ]
    finally:
        db.close()
    return Outcome(code if isinstance(code, int) else None, "".join(lines))
