"""Checking one recorded scope with its losses: the one way every surface runs the rules.

Rules:
- ``check``, bug-report bundles, the MCP server and the web inspector all check a recording
  through ``ScopeCheck`` (``check_scope`` runs it to the end), so they give the same findings.
  Which rules run and which schemas they use is each surface's choice; what a scope's check
  reads is not: every frame of the scope in ``seq`` order, then the connection's losses
  (``frames_lost``, ``bytes_lost``, ``error``) and, for a remote connection, how it was carried
  (its exchanges and frame transports) for ``finish``, so REC001 and the transport rules are
  found everywhere.
- The losses are read when the check finishes, not when it starts: a live recording's losses
  grow while it is checked.
- Stepwise (``step``), a check holds no database handle: each call is given the one of the
  calling thread (the inspector reads from worker threads).
"""

from __future__ import annotations

from collections.abc import Iterable

from acp_proxy.check.base import Finding, Losses
from acp_proxy.check.engine import Checker
from acp_proxy.check.report import Checked
from acp_proxy.check.schemas import SchemaBook
from acp_proxy.store.frames import frames, losses
from acp_proxy.store.readers import Database
from acp_proxy.store.refs import Scope
from acp_proxy.store.transport_facts import transport_facts
from acp_proxy.store.transport_kind import is_remote


class ScopeCheck:
    """The rule engine over one scope, fed from the store step by step."""

    def __init__(
        self, target: Scope, schemas: SchemaBook | None = None, rules: Iterable[str] | None = None
    ) -> None:
        self.target = target
        self.checker = Checker(
            schemas, rules=rules, protocol_version=target.protocol_version,
            connection_id=target.connection_id,
        )  # fmt: skip
        self.frames = 0  # frames checked so far
        self.checked_seq = 0  # the last one's seq
        self.findings: list[Finding] = []
        self.finished = False

    def step(self, db: Database, limit: int = -1) -> int:
        """Check up to ``limit`` more frames (all there are when negative); how many it took.

        Fewer than ``limit``: every frame committed so far is checked. Findings gather in
        ``findings``.
        """
        taken = 0
        if not self.checked_seq:
            self.checker.context.remote = is_remote(db, self.target.connection_id)
        for record in frames(db, self.target, after_seq=self.checked_seq, limit=limit):
            taken += 1
            self.checked_seq = record.seq
            self.findings += self.checker.observe(record)
        self.frames += taken
        return taken

    def finish(self, db: Database) -> list[Finding]:
        """End of the scope: the findings only the end can tell, its losses among them."""
        if self.finished:
            return []
        self.finished = True
        connection_id = self.target.connection_id
        found = self.checker.finish(
            Losses(*losses(db, connection_id)), transport_facts(db, connection_id)
        )
        self.findings += found
        return found

    def checked(self) -> Checked:
        target = self.target
        return Checked(
            target.connection_id, target.label, target.protocol_version, self.frames,
            list(self.findings),
        )  # fmt: skip


def check_scope(
    db: Database,
    target: Scope,
    schemas: SchemaBook | None = None,
    rules: Iterable[str] | None = None,
) -> Checked:
    """Every frame of ``target`` and its losses through the rules (``check``'s answer)."""
    scope_check = ScopeCheck(target, schemas, rules)
    scope_check.step(db)
    scope_check.finish(db)
    return scope_check.checked()
