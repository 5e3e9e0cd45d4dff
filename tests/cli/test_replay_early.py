"""cli/entry.py reads the plain ``replay [--db DB] [--record] REF`` itself, before click: what
it reads must be what the command reads, every other option at the command's default."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.cli.entry import early_replay_settings
from acp_proxy.cli.replay import replay_command
from acp_proxy.cli.replay_plain import DEFAULT_TIMEOUT_S
from acp_proxy.paths import DB_ENV

WORDS = ["--db", "--db=a.sqlite", "a.sqlite", "--record", "1", "last", "--", "-x", "--timing",
         "x2", "--db=", "--record=1", "--session", "s", "agent", ""]  # fmt: skip
DEFAULTS = {
    "session": None, "timing": "asap", "max_gap": None, "on_mismatch": "error", "ignore": (),
    "to_agent": False, "go_live": False, "listen": None, "timeout": DEFAULT_TIMEOUT_S,
    "agent_command": (),
}  # fmt: skip


def _click_reads(args: list[str]) -> dict[str, object] | None:
    try:
        context = replay_command.make_context("replay", list(args))
    except Exception:  # any refusal: the early form must not have taken it
        return None
    return dict(context.params)


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(st.sampled_from(WORDS), max_size=6),
    env=st.sampled_from([None, "", "env.sqlite"]),
)
def test_what_the_early_form_takes_it_reads_as_click_does(
    words: list[str], env: str | None
) -> None:
    environ = {k: v for k, v in os.environ.items() if k != DB_ENV}
    if env is not None:
        environ[DB_ENV] = env
    with mock.patch.dict(os.environ, environ, clear=True):
        early = early_replay_settings(["replay", *words])
        if early is None:
            return
        params = _click_reads(words)
    assert params is not None, words
    assert {k: params[k] for k in DEFAULTS} == DEFAULTS
    expected_db = None if params["db"] is None else str(params["db"])
    assert (early.db, early.ref, early.record) == (expected_db, params["ref"], params["record"])


@pytest.mark.parametrize(
    "args",
    [["replay", "1"], ["replay", "--db", "x.sqlite", "1"], ["replay", "1", "--db=x.sqlite"],
     ["replay", "cassette.jsonl", "--record", "--db", "x.sqlite"]],
    ids=" ".join,
)  # fmt: skip
def test_the_plain_forms_are_taken(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    assert early_replay_settings(args) is not None


@pytest.mark.parametrize(
    "args",
    [["replay"], ["replay", "--help"], ["replay", "1", "2"], ["replay", "--timing", "x2", "1"],
     ["replay", "--db", "1"], ["replay", "--listen", "127.0.0.1:0", "1"],
     ["replay", "--record", "--record", "1"], ["replay", "--to-agent", "1", "--", "a"]],
    ids=" ".join,
)  # fmt: skip
def test_everything_else_goes_to_the_command_line(args: list[str]) -> None:
    assert early_replay_settings(args) is None


def test_a_folder_as_db_goes_to_the_command_line(tmp_path: Path) -> None:
    assert early_replay_settings(["replay", "--db", str(tmp_path), "1"]) is None
    assert os.path.isdir(tmp_path)
