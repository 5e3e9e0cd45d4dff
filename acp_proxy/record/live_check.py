"""``record --check``: the spec rules applied as frames are recorded, in the recorder process.

Rules:
- Runs where the recorder runs (its own process, idle priority): checking never touches the
  forwarding path.
- Findings are said on stderr as they happen (one line each, never stdout) and stored in the
  recording's ``finding`` table with the frames they are about.
- Schemas as `check` gets them (check/schema_setup.py: fetched on first use when npm is
  there), loaded once per recorder process (``LiveSchemas``: a listener's many connections
  share one load); without them every rule that needs none still runs, and the proxy says so
  once.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_proxy.check.base import Finding
from acp_proxy.check.engine import Checker, select_rules
from acp_proxy.check.report import finding_line
from acp_proxy.check.schema_files import SchemasUnavailable
from acp_proxy.check.schema_setup import obtain
from acp_proxy.check.schemas import SchemaBook
from acp_proxy.protocol.observer import FrameRecord
from acp_proxy.stderr import Reporter
from acp_proxy.store.writer import StoredFinding

SCHEMA_RULE = "ACP000"


class LiveSchemas:
    """The schemas of one recorder's checking, obtained on first use and then kept: a
    listener's recorder checks many connections with one load (and says once what went
    wrong getting them)."""

    def __init__(self, report: Reporter) -> None:
        self._report = report
        self._obtained = False
        self._book: SchemaBook | None = None

    def book(self) -> SchemaBook | None:
        if not self._obtained:
            self._obtained = True
            report = self._report
            try:
                self._book = obtain(None, lambda message: report(f"record --check: {message}")).book
            except SchemasUnavailable as error:  # ACP_PROXY_SCHEMAS names no schemas
                report(f"record --check: {error}")
        return self._book


class LiveCheck:
    """One connection's rule checking while it is recorded."""

    def __init__(self, report: Reporter, schemas: LiveSchemas | None = None) -> None:
        self._report = report
        book = (schemas or LiveSchemas(report)).book()
        rules = select_rules() if book is not None else select_rules(ignore=[SCHEMA_RULE])
        self._checker = Checker(book, rules=rules)
        self.findings = 0

    def set_connection(self, connection_id: int) -> None:
        self._checker.context.connection_id = connection_id

    def frames(self, records: Sequence[FrameRecord]) -> list[StoredFinding]:
        observe = self._checker.observe
        return self._said([finding for record in records for finding in observe(record)])

    def finish(self) -> list[StoredFinding]:
        return self._said(self._checker.finish())

    def _said(self, findings: list[Finding]) -> list[StoredFinding]:
        for finding in findings:
            self._report(f"check: {finding_line(finding)}")
        self.findings += len(findings)
        return [(f.seq, f.direction, f.rule, f.severity, f.message) for f in findings]
