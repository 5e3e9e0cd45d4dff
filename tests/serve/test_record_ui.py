"""``acp-proxy record --ui``: the inspector beside a recording, its address on stderr only."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import line
from tests.support.ui_server import env, wait_for

pytestmark = pytest.mark.timeout(60)

ADDRESS = re.compile(rb"acp-proxy: ui at (http://127\.0\.0\.1:\d+/\S+/)\n")
# An agent that answers one request, then waits for its stdin to close.
AGENT = (
    "import sys\n"
    "sys.stdin.readline()\n"
    'sys.stdout.write(\'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\\n\')\n'
    "sys.stdout.flush()\n"
    "sys.stdin.read()\n"
)


@pytest.mark.parametrize("early", [True, False], ids=["early-launch", "command-line"])
def test_record_ui_serves_the_recording_beside_it(tmp_path: Path, early: bool) -> None:
    db = tmp_path / "r.sqlite"
    options = ["--ui", "--db", str(db)] if early else ["--db", str(db), "--ui", "--label", "x"]
    err = tmp_path / "stderr"
    with err.open("wb") as sink:
        proxy = subprocess.Popen(
            [sys.executable, "-m", "acp_proxy", "record", *options, "--",
             sys.executable, "-c", AGENT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink, env=env(),
        )  # fmt: skip
    with proxy:
        _talk(proxy, err)


def _talk(proxy: subprocess.Popen[bytes], err: Path) -> None:
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    request = line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": 1}})  # fmt: skip
    proxy.stdin.write(request)
    proxy.stdin.flush()
    answer = proxy.stdout.readline()
    assert answer == b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n'
    found = wait_for(lambda: ADDRESS.search(err.read_bytes()), "the ui's address", 30)
    url = found.group(1).decode()
    connections = wait_for(
        lambda: httpx.get(url + "api/connections", timeout=10).json()["connections"],
        "the connection in the ui",
    )
    assert connections[0]["proxy_pid"] == proxy.pid
    info = httpx.get(url + "api/info", timeout=10).json()
    assert info["initial"] == {"proxy_pid": proxy.pid}
    rows = wait_for(
        lambda: (
            httpx.get(url + f"api/connections/{connections[0]['id']}/rows", timeout=10).json()[
                "total"
            ]
            == 2
        ),
        "both frames",
    )
    assert rows
    proxy.stdin.close()
    assert proxy.wait(timeout=30) == 0
    assert proxy.stdout.read() == b"", "the proxy wrote more than the agent's bytes to stdout"

    def gone() -> bool:
        try:
            httpx.get(url + "api/info", timeout=1)
        except httpx.HTTPError:
            return True
        return False

    wait_for(gone, "the ui to end with the proxy", 15)
