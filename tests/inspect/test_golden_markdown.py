"""Golden Markdown of a real-peer recording: the demo client and agent (official ACP Python SDK)
talk through ``acp-proxy record`` (the session's demo recording, tests/support/demo_recording.py,
markup in its prompt); the Markdown export must match tests/golden/demo.md.

What varies between runs (timings, the wall clock, the temporary folder, the version) is
replaced by placeholders before comparing, and so are the seeded secrets (a golden file holds
no string shaped like a real token). ``ACP_PROXY_UPDATE_GOLDEN=1`` rewrites the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from acp_proxy import __version__
from tests.support.demo_recording import LABEL, SECRETS, DemoRecording
from tests.support.processes import acp_proxy

GOLDEN = Path(__file__).parent / "golden" / "demo.md"


def normalize(text: str, folder: Path) -> str:
    text = text.replace(str(folder.resolve()), "/TMP").replace(str(folder), "/TMP")
    text = re.sub(r"\b\d+(?:\.\d+)? (?:us|ms|s)(?![a-z])", "<duration>", text)
    text = re.sub(r"Recorded: [^,]+ UTC", "Recorded: <when>", text)
    for secret in SECRETS:
        text = text.replace(secret, "<secret>")
    return text.replace(f" {__version__}", " <version>")


def test_markdown_of_a_recorded_demo_conversation(demo_recording: DemoRecording) -> None:
    db = demo_recording.db
    exported = acp_proxy("export", LABEL, "--format", "markdown", "--db", str(db))
    assert exported.returncode == 0, exported.stderr
    text = normalize(exported.stdout, demo_recording.root)
    if os.environ.get("ACP_PROXY_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "run with ACP_PROXY_UPDATE_GOLDEN=1 to accept the change"
