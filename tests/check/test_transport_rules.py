"""TRN001-TRN003: the remote transport's rules, on remote recordings written in a database.

A conversation carried as the RFD says gives no finding; each departure (no Acp-Connection-Id on
the initialize answer, a session-scoped POST without or with the wrong Acp-Session-Id, a message
on a stream its kind does not belong to, a session's message on another session's stream) is
found once, on its frame, by ``acp-proxy check``. A stdio recording is never judged by them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from tests.support.helpers import A2C, C2A, write_recording
from tests.support.remote_recordings import (
    CONNECTION,
    DONE,
    INIT,
    INIT_OK,
    NEW,
    NEW_OK,
    PROMPT,
    exchange,
    http_exchanges,
    http_frames,
    write_remote,
)


def checked(db: Path, ref: str = "1") -> list[dict[str, Any]]:
    """The TRN findings of ``check REF`` (exit 1 with findings, 0 without)."""
    result = CliRunner().invoke(cli, ["check", "--format", "json", "--select", "TRN", ref,
                                      "--db", str(db)])  # fmt: skip
    findings: list[dict[str, Any]] = json.loads(result.output)["findings"]
    assert result.exit_code == (1 if findings else 0), result.output
    return findings


def transport_findings(db: Path, ref: str = "1") -> list[str]:
    return [f"{f['rule']} #{f['seq']} {f['message']}" for f in checked(db, ref)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "r.sqlite"


def test_a_conversation_carried_as_the_rfd_says_has_no_finding(db: Path) -> None:
    write_remote(db, "http", http_exchanges(), http_frames())
    assert transport_findings(db) == []


def test_an_initialize_answer_without_a_connection_id(db: Path) -> None:
    headers = [["content-type", "application/json"]]
    write_remote(db, "http", http_exchanges(init_headers=headers), http_frames())
    assert transport_findings(db) == [
        "TRN001 #2 the answer to the initialize POST (exchange 1) has no Acp-Connection-Id header"
    ]


def test_a_session_scoped_post_without_or_with_another_session_id(db: Path) -> None:
    write_remote(db, "http", http_exchanges(prompt_session=None), http_frames())
    write_remote(db, "http", http_exchanges(prompt_session="other"), http_frames())
    assert transport_findings(db) == [
        "TRN002 #5 the POST of session/prompt (exchange 5) has no Acp-Session-Id header"
    ]
    found = checked(db, "2")
    assert [(f["rule"], f["seq"]) for f in found] == [("TRN002", 5)]
    assert "names session 'other' in Acp-Session-Id, its message 'sess_1'" in found[0]["message"]


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ((5, "post"), "a a2c message (session/update) crossed on post"),
        (
            (1, "post_answer"),
            "session/update came as a POST's answer body: only initialize is answered there",
        ),
    ],
)
def test_a_message_on_a_stream_its_kind_does_not_belong_to(
    db: Path, where: tuple[int, str], says: str
) -> None:
    write_remote(db, "http", http_exchanges(), http_frames(update_on=where))
    assert transport_findings(db) == [f"TRN003 #6 {says}"]


def test_a_session_message_on_another_sessions_stream(db: Path) -> None:
    rows = [*http_exchanges(), exchange(6, "GET", "session_sse", 200, acp_connection_id="c1",
                                        acp_session_id="sess_2")]  # fmt: skip
    write_remote(db, "http", rows, http_frames(update_on=(6, "session_sse")))
    assert transport_findings(db) == [
        "TRN003 #6 session/update for session 'sess_1' came on the stream of 'sess_2'"
    ]


def test_a_websocket_needs_the_connection_id_on_its_upgrade(db: Path) -> None:
    frames = [(d, raw.rstrip(), 1, "websocket") for d, raw in
              [(C2A, INIT), (A2C, INIT_OK), (C2A, NEW), (A2C, NEW_OK)]]  # fmt: skip
    write_remote(db, "websocket", [exchange(1, "GET", "websocket", 101,
                                            response_headers=CONNECTION)], frames)  # fmt: skip
    write_remote(db, "websocket", [exchange(1, "GET", "websocket", 101, response_headers=[])],
                 frames)  # fmt: skip
    assert transport_findings(db) == []
    assert [f["message"] for f in checked(db, "2")] == [
        "the answer to the WebSocket upgrade (exchange 1) has no Acp-Connection-Id header"
    ]


def test_stdio_recordings_are_not_judged(db: Path) -> None:
    write_recording(db, [(C2A, INIT), (A2C, INIT_OK), (C2A, PROMPT), (A2C, DONE)])
    assert transport_findings(db) == []
