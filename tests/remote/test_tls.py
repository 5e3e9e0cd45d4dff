"""TLS both ways: ``--cert``/``--key`` serve https and wss; an https upstream is verified
(``--upstream-ca`` for a private CA, and nothing else makes an unknown CA acceptable)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from tests.support.processes import run_to_end
from tests.support.remote_peers import Listener, python_client, python_server, run_client

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]


def _openssl(*args: str) -> None:
    run_to_end(["openssl", *args], text=False, check=True, timeout=60)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private CA and a certificate it signed for 127.0.0.1."""
    folder = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.pem"),
             "-subj", "/CN=acp-proxy test CA")  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(folder / "server.key"),
             "-out", str(folder / "server.csr"), "-subj", "/CN=127.0.0.1")  # fmt: skip
    (folder / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", str(folder / "server.csr"), "-CA", str(folder / "ca.pem"),
             "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-days", "2",
             "-extfile", str(folder / "ext"), "-out", str(folder / "server.pem"))  # fmt: skip
    return folder


def test_a_tls_listener_behind_a_verifying_one(
    tmp_path: Path, python_examples: Path, certificates: Path
) -> None:
    """client -> plain listener -> (https, verified against the private CA) -> TLS listener
    -> the Python SDK's server; both profiles."""
    tls = ("--cert", str(certificates / "server.pem"), "--key", str(certificates / "server.key"))
    with (
        python_server(python_examples) as upstream,
        Listener(tmp_path / "tls.db", upstream, *tls) as inner,
    ):
        assert inner.url.startswith("https://127.0.0.1:")
        with Listener(tmp_path / "outer.db", inner.url,
                      "--upstream-ca", str(certificates / "ca.pem")) as outer:  # fmt: skip
            for name, url in (("http_client.py", outer.url), ("ws_client.py", outer.ws_url)):
                argv, extra = python_client(python_examples, name, url)
                assert "stop reason: end_turn" in run_client(argv, extra)
        # Without the private CA the same upstream is refused: a 502, never unverified bytes.
        with Listener(tmp_path / "refused.db", inner.url) as unverified:
            argv, extra = python_client(python_examples, "http_client.py", unverified.url)
            with pytest.raises(AssertionError, match="502"):
                run_client(argv, extra)
    for db in ("tls.db", "outer.db"):
        with contextlib.closing(sqlite3.connect(tmp_path / db)) as conn:
            rows = conn.execute("SELECT transport, status FROM connection ORDER BY id").fetchall()
        errors = conn_errors(tmp_path / db)
        assert rows == [("http", "closed"), ("websocket", "closed")], (db, rows, errors)
    assert any("unreachable" in line and "CERTIFICATE_VERIFY_FAILED" in line
               for line in unverified.stderr_lines), unverified.stderr_lines  # fmt: skip


def conn_errors(db: Path) -> list[tuple[str | None, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            "SELECT c.transport, c.error, e.error FROM connection c "
            "JOIN http_exchange e ON e.connection_id = c.id WHERE c.transport = 'websocket'"
        ).fetchall()
