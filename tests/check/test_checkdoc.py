"""docs/checks.md is generated from the rules and must be current."""

from __future__ import annotations

from acp_proxy.check import doc as checkdoc
from acp_proxy.check.engine import RULES


def test_checks_doc_is_current() -> None:
    assert checkdoc.main(["--check"]) == 0, "run: python -m acp_proxy.check.doc"


def test_every_rule_has_a_row_with_source_and_fix() -> None:
    text = checkdoc.render()
    for info in RULES:
        assert f"| {info.id} | {info.severity}" in text
        assert info.source
        assert info.fix
        assert info.severity in {"error", "warning"}
