"""Golden Markdown of a real-peer recording: the demo client and agent (official ACP Python SDK)
talk through ``acp-proxy record``; the Markdown export must match tests/golden/demo.md.

What varies between runs (timings, the wall clock, the temporary folder, the version) is
replaced by placeholders before comparing. ``ACP_PROXY_UPDATE_GOLDEN=1`` rewrites the file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from acp_proxy import __version__

GOLDEN = Path(__file__).parent / "golden" / "demo.md"
PROMPTS = ["How long is this file?", "And now? <b>bold</b> `code` <script>x()</script>"]


def normalize(text: str, folder: Path) -> str:
    text = text.replace(str(folder.resolve()), "/TMP").replace(str(folder), "/TMP")
    text = re.sub(r"\b\d+(?:\.\d+)? (?:us|ms|s)(?![a-z])", "<duration>", text)
    text = re.sub(r"Recorded: [^,]+ UTC", "Recorded: <when>", text)
    return text.replace(f" {__version__}", " <version>")


def test_markdown_of_a_recorded_demo_conversation(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\n\nthird line is the longest\n")
    db = tmp_path / "rec.sqlite"
    proxy = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--label", "golden"]
    agent = [sys.executable, "-m", "acp_proxy.demo.agent"]
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--file", "notes.txt"]
    for prompt in PROMPTS:
        client += ["--prompt", prompt]
    done = subprocess.run(
        [*client, "--", *proxy, "--", *agent], cwd=tmp_path, capture_output=True, text=True,
        timeout=50, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    export = [sys.executable, "-m", "acp_proxy", "export", "golden", "--format", "markdown"]
    exported = subprocess.run(
        [*export, "--db", str(db)], capture_output=True, text=True, timeout=30, check=True
    )
    text = normalize(exported.stdout, tmp_path)
    if os.environ.get("ACP_PROXY_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "run with ACP_PROXY_UPDATE_GOLDEN=1 to accept the change"
