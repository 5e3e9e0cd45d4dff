"""Cassettes: one recorded connection kept as a JSONL export file next to the tests.

Rules:
- A cassette is the project's JSONL export (docs/recording-format.md): ``acp-proxy import``
  reads it back into any database, and ``replay`` and ``replay --to-agent`` take it as a REF.
- ``save`` writes the last connection of a scratch database to the cassette, redacted by
  default with the bug-report redaction (redact.py: placeholders ``[redacted:KIND:N]``, which
  replay matches); when verification still finds something that looks secret, nothing is
  written and ``CassetteError`` says what. The file is replaced whole (written beside, renamed).
- ``outcome`` reads how a run recorded in a scratch database ended (its exit code and the
  summary it wrote on stderr), for the pytest plugin's verdict on a replay.
- No pytest here: pytest_plugin.py uses these.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from . import store_read
from .errors import AcpProxyError
from .export import export
from .store_check import scope


class CassetteError(AcpProxyError):
    """A cassette cannot be written or its run cannot be read."""


@dataclass(frozen=True, slots=True)
class Outcome:
    exit_code: int | None
    stderr: str  # what the run wrote on stderr (a replay's summary), decoded


def _last(db_path: Path) -> tuple[store_read.Database, int]:
    if not db_path.exists():
        raise CassetteError("nothing was recorded (the command was never run)")
    db = store_read.open_for_reading(db_path)
    try:
        return db, scope(db, "last").connection_id
    except AcpProxyError as error:
        db.close()
        raise CassetteError(f"nothing was recorded: {error}") from error


def save(db_path: Path, cassette: Path, *, redact: bool = True) -> None:
    """Write the last connection of ``db_path`` to ``cassette`` (see the module rules)."""
    db, connection_id = _last(db_path)
    out = io.BytesIO()
    try:
        if redact:
            from .redact import Redactor
            from .redaction_io import finder_for, redacted_export
            from .verify import Verifier

            finder = finder_for(os.environ)
            leaks = redacted_export(db, connection_id, Redactor(finder), Verifier(finder), out)
            if leaks:
                shown = "; ".join(leak.shown() for leak in leaks[:3])
                raise CassetteError(f"{cassette} not written: still looks secret: {shown}")
        else:
            export(db, connection_id, "jsonl", out)
    finally:
        db.close()
    cassette.parent.mkdir(parents=True, exist_ok=True)
    scratch = cassette.with_name(f".{cassette.name}.tmp")
    scratch.write_bytes(out.getvalue())
    scratch.replace(cassette)


def outcome(db_path: Path) -> Outcome:
    """How the last run recorded in ``db_path`` ended."""
    db, connection_id = _last(db_path)
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
