"""The inspector counts in words as the command line does: ``1 row``, ``2 rows``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.processes import run_to_end

FORMAT = Path(__file__).parents[2] / "acp_proxy" / "serve" / "ui" / "static" / "format.js"


def test_counted_is_singular_for_one_only() -> None:
    node = shutil.which("node")
    assert node, "node is missing: .ci/install-node-peers installs it"
    script = (
        f"import {{ counted }} from {json.dumps(FORMAT.as_uri())};\n"
        "console.log(JSON.stringify([0, 1, 2, 12000].map((n) => counted(n, 'row')).concat("
        "[counted(1, 'entry', 'entries'), counted(3, 'entry', 'entries')])));\n"
    )
    done = run_to_end([node, "--input-type=module", "-e", script], timeout=30, check=True)
    assert json.loads(done.stdout) == [
        "0 rows", "1 row", "2 rows", "12,000 rows", "1 entry", "3 entries",
    ]  # fmt: skip
