"""``acp-proxy ui`` stopped with Ctrl-C (a real SIGINT to the process): it says nothing more and
exits 130, as a program Ctrl-C ended does (cli/ui.py says why). Before, click printed
"Aborted!" and the status was 1, as if it had failed. Stopped by Ctrl-C or SIGTERM, it leaves
none of its rule checkers' files behind."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.ui_server import wait_for

pytestmark = pytest.mark.timeout(60)


def test_ctrl_c_stops_the_ui_quietly_with_status_130(db_path: Path, serve_ui: Any) -> None:
    write_recording(db_path, V1_CONVERSATION)
    served = serve_ui("--db", str(db_path))
    assert httpx.get(served.url + "api/connections", timeout=30).status_code == 200
    said_before = served.log.read_text()
    served.process.send_signal(signal.SIGINT)
    assert served.process.wait(timeout=30) == 130
    assert served.log.read_text() == said_before  # not a word more: no "Aborted!"


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)]
)
def test_a_stopped_ui_leaves_no_file_of_its_checkers(
    db_path: Path,
    serve_ui: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    signum: int,
    status: int,
) -> None:
    """The rule checker's findings file is deleted however the server is stopped, and SIGTERM
    still ends it as the signal does."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    write_recording(db_path, V1_CONVERSATION)
    served = serve_ui("--db", str(db_path))
    findings = served.url + "api/connections/1/findings"
    wait_for(lambda: httpx.get(findings, timeout=30).json()["complete"], "the check", 30)
    assert list(scratch.glob("acp-proxy-ui-*/findings-1.sqlite"))
    served.process.send_signal(signum)
    assert served.process.wait(timeout=30) == status
    assert list(scratch.iterdir()) == []
