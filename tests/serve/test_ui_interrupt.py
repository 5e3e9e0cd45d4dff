"""``acp-proxy ui`` stopped with Ctrl-C (a real SIGINT to the process): it says nothing more and
exits 130, as a program Ctrl-C ended does (cli/ui.py says why). Before, click printed
"Aborted!" and the status was 1, as if it had failed."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording

pytestmark = pytest.mark.timeout(60)


def test_ctrl_c_stops_the_ui_quietly_with_status_130(db_path: Path, serve_ui: Any) -> None:
    write_recording(db_path, V1_CONVERSATION)
    served = serve_ui("--db", str(db_path))
    assert httpx.get(served.url + "api/connections", timeout=30).status_code == 200
    said_before = served.log.read_text()
    served.process.send_signal(signal.SIGINT)
    assert served.process.wait(timeout=30) == 130
    assert served.log.read_text() == said_before  # not a word more: no "Aborted!"
