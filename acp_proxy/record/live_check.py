"""``record --check``: the spec rules applied as frames are recorded, in the recorder process.

Rules:
- Runs where the recorder runs (its own process, idle priority): checking never touches the
  forwarding path.
- Findings are said on stderr as they happen (one line each, never stdout) and stored in the
  recording's ``finding`` table with the frames they are about.
- Without installed schemas, every rule that needs none still runs; the proxy says so once.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_proxy.check.base import Finding
from acp_proxy.check.engine import Checker, select_rules
from acp_proxy.check.report import finding_line
from acp_proxy.check.schema_files import SchemasUnavailable, load_book
from acp_proxy.protocol.observer import FrameRecord
from acp_proxy.stderr import Reporter
from acp_proxy.store.database import StoredFinding

SCHEMA_RULE = "ACP000"


class LiveCheck:
    """One connection's rule checking while it is recorded."""

    def __init__(self, report: Reporter) -> None:
        self._report = report
        try:
            book = load_book(None)
            rules = select_rules()
        except SchemasUnavailable as error:
            report(f"record --check: {error}; checking every rule but schema validation")
            book, rules = None, select_rules(ignore=[SCHEMA_RULE])
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
