"""Fixtures shared by every test module: a database path, the official SDKs' peers on disk
(``.peers/``, or ``ACP_PROXY_PEERS_DIR``) for the integration and inspector tests, and the demo
recording (tests/support/demo_recording.py), made once per session.

Ctrl-C as a terminal delivers it: a run started as a background job inherits SIGINT ignored,
and every process the tests start would inherit that too (Python then installs no
KeyboardInterrupt), so the tests that send SIGINT to a command would fail for how the run was
started, not for what the command does. The default is put back here, before any test starts a
process.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from tests.support import demo_recording as demo
from tests.support.processes import run_to_end

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
PY_SDK = "agent-client-protocol"
PY_SDK_VERSION = "0.12.1"
PY_SDK_SDIST = f"agent_client_protocol-{PY_SDK_VERSION}.tar.gz"
PY_SDK_SDIST_SHA256 = "9963ccb590ed96d7dc542c9c023e90676fc76b1c6562e21a9ee112f4fbcb0095"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "rec.sqlite"


@pytest.fixture(scope="session")
def demo_recording(tmp_path_factory: pytest.TempPathFactory) -> demo.DemoRecording:
    """The demo pair's seeded conversation, recorded once: read it, never write into it."""
    return demo.record(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="session")
def peers_dir() -> Path:
    path = Path(os.environ.get("ACP_PROXY_PEERS_DIR", REPO / ".peers"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def python_examples(peers_dir: Path) -> Path:
    """The ``examples/`` folder of the Python SDK's sdist, downloaded on first use."""
    root = peers_dir / "python" / f"agent_client_protocol-{PY_SDK_VERSION}"
    if not (root / "examples" / "client.py").is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        _fetch_python_sdist(root)
    return root / "examples"


def _fetch_python_sdist(root: Path) -> None:
    with tempfile.TemporaryDirectory(dir=root.parent) as scratch:
        pip = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check"]
        pip += ["--no-binary", ":all:", "--no-deps", "-d", scratch, f"{PY_SDK}=={PY_SDK_VERSION}"]
        done = run_to_end(pip, timeout=300)
        if done.returncode != 0:
            pytest.fail(f"could not download the {PY_SDK} sdist (needs PyPI):\n{done.stderr}")
        sdist = Path(scratch) / PY_SDK_SDIST
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        assert digest == PY_SDK_SDIST_SHA256, f"{sdist.name} has sha256 {digest}"
        with tarfile.open(sdist) as tar:
            tar.extractall(scratch, filter="data")
        # Renamed into place whole, so a half-extracted tree is never mistaken for a cache hit;
        # a test process beside this one (a pytest-xdist worker) may have put it there first.
        try:
            os.replace(Path(scratch) / root.name, root)
        except OSError:
            if not (root / "examples" / "client.py").is_file():
                raise
