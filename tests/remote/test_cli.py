"""``record --listen``'s command line: mistakes are one line and exit 2, the extra's message."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_to_end, started
from tests.support.remote_peers import Listener, env, free_port

pytestmark = [pytest.mark.timeout(60)]


def _record(tmp_path: Path, *args: str, code: int = 2) -> str:
    argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(tmp_path / "r.db"), *args]
    done = run_to_end(argv, text=False, env=env(), timeout=30)
    assert done.returncode == code, done.stderr
    assert done.stdout == b""
    return done.stderr.decode()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--listen", "127.0.0.1:0"], "--listen needs --upstream URL"),
        (["--listen", "127.0.0.1:0", "--upstream", "ftp://x/acp"], "must be an http(s)"),
        (["--listen", "nowhere", "--upstream", "http://x/acp"], "give it as HOST:PORT"),
        (
            ["--listen", "127.0.0.1:0", "--upstream", "http://x/acp", "--", "agent"],
            "give no agent command",
        ),
        (["--upstream", "http://x/acp", "--", "agent"], "--upstream needs --listen"),
        (["--record-credentials", "--", "agent"], "--record-credentials needs --listen"),
        (["--key", __file__, "--", "agent"], "--key needs --listen"),
        (
            ["--listen", "127.0.0.1:0", "--upstream", "http://x/acp", "--cert", __file__],
            "--cert and --key go together",
        ),
        (
            ["--listen", "127.0.0.1:0", "--upstream", "http://x/acp", "--connect", "http://y/acp"],
            "--listen and --connect do not go together",
        ),
        ([], "or --listen HOST:PORT"),
    ],
)
def test_mistakes_are_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    stderr = _record(tmp_path, *args)
    assert said in stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "r.db").exists()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        stderr = _record(tmp_path, "--listen", f"127.0.0.1:{port}", "--upstream", "http://x/acp")
    assert stderr.count("\n") == 1
    assert f"--listen 127.0.0.1:{port}: " in stderr


def test_without_the_extra_one_line_says_how_to_get_it(tmp_path: Path) -> None:
    # A finder that makes aiohttp impossible to import, as on an install without the extra.
    code = (
        "import sys\n"
        "class Gone:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'aiohttp':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Gone())\n"
        "from acp_proxy.cli.entry import main\n"
        "main()\n"
    )
    argv = [sys.executable, "-c", code, "record", "--db", str(tmp_path / "r.db"),
            "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/acp"]  # fmt: skip
    done = run_to_end(argv, text=False, env=env(), timeout=30)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "acp-proxy: remote transports need the remote extra (aiohttp missing): "
        "pip install 'acp-proxy[remote]'\n"
    )


def test_another_address_than_loopback_is_warned_about(tmp_path: Path) -> None:
    with Listener(tmp_path / "r.db", f"http://127.0.0.1:{free_port()}/acp") as loopback:
        pass
    assert not [line for line in loopback.stderr_lines if "not a loopback" in line]
    argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(tmp_path / "r.db"),
            "--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:9/acp"]  # fmt: skip
    with started(argv, stderr=subprocess.PIPE, env=env()) as process:
        assert process.stderr is not None
        first = process.stderr.readline().decode()
        process.terminate()
        process.communicate(timeout=30)
    assert "listening on 0.0.0.0, which is not a loopback address" in first
