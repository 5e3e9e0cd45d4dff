"""check/scope_check.py: one check of a scope with its losses, so that ``check``, bug-report
bundles, the MCP server and the web inspector give the same findings (REC001 among them)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import orjson
import pytest

from acp_proxy.serve.mcp.bounds import MIN_MAX_BYTES
from acp_proxy.serve.mcp.copies import Copies
from acp_proxy.serve.mcp.library import Library
from acp_proxy.serve.ui.state import Database, Inspector, load_schemas
from acp_proxy.share.secrets import Finder
from acp_proxy.store.database import connect
from acp_proxy.store.search import open_for_search
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.cli import run
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import A2C, line, observe_all
from tests.support.schemas import installed_schemas
from tests.support.ui_server import wait_for

REASON = "frames not recorded: the recorder fell behind"
# An answer to a request nobody sent: a finding of the stateful rules, besides REC001.
STRAY = (A2C, line({"jsonrpc": "2.0", "id": 99, "result": {}}))

Found = set[tuple[str, int | None, str, str]]


def _found(findings: list[dict[str, object]]) -> Found:
    return {(str(f["rule"]), f["seq"], str(f["severity"]), str(f["message"])) for f in findings}  # type: ignore[misc]


@pytest.fixture
def holey(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished recording that lost frames and holds a stray answer; schemas installed."""
    monkeypatch.delenv("ACP_PROXY_SCHEMAS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(installed_schemas().parents[2]))
    observer, records = observe_all([*V1_CONVERSATION, STRAY])
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["agent"], "/", "test", 1, label="holey"))
    writer.append(records, facts=observer.facts(), lost=(3, 4096))
    writer.update(status="incomplete", error=REASON, exit_code=0)
    db.close()
    return db_path


def test_check_bundle_mcp_and_the_inspector_give_the_same_findings(
    holey: Path, tmp_path: Path
) -> None:
    cli = _found(json.loads(run(holey, "check", "holey", "--format", "json", code=1).output)[
        "findings"])  # fmt: skip

    bundle = tmp_path / "report.acpbundle"
    run(holey, "bundle", "holey", "-o", str(bundle))
    with zipfile.ZipFile(bundle) as opened:
        in_bundle = _found(json.loads(opened.read("check.json"))["findings"])

    db, writable = open_for_search(holey)
    library = Library(Copies(db, Finder({}, home="/home/u", user="u")), MIN_MAX_BYTES,
                      writable=writable)  # fmt: skip
    mcp = _found(library.check("holey")["findings"])

    schemas, documents = load_schemas()
    assert schemas is not None
    inspector = Inspector(Database(holey), schemas, documents)
    inspector.start_checking(1)  # in a process of its own, as the page's
    try:
        checked = wait_for(lambda: (f := inspector.findings(1))["finished"] and f,
                           "the inspector's check to finish")  # fmt: skip
    finally:
        inspector.close()
    ui = _found(orjson.loads(orjson.dumps(checked["findings"])))

    assert {rule for rule, *_ in cli} >= {"REC001", "ACP004"}, cli
    assert cli == in_bundle == mcp == ui
