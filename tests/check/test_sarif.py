"""``check --format sarif``: a SARIF 2.1.0 log that the standard's own schema accepts.

The schema is the OASIS SARIF 2.1.0 JSON Schema as schemastore publishes it, installed by
.ci/install-sarif-schema into .peers/sarif (part of ``.ci/run``), and read with the draft-04
validator it declares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main
from tests.support.fixtures_checks import PROMPT, res, v1
from tests.support.helpers import ERR, write_recording

REPO = Path(__file__).parents[2]
SCHEMA = REPO / ".peers" / "sarif" / "sarif-2.1.0-rtm.5.json"
SAMPLE = REPO / "recordings" / "edge-cases.jsonl"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    assert SCHEMA.is_file(), f"{SCHEMA} is missing: run .ci/install-sarif-schema"
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def sarif(*args: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(main, ["check", "--format", "sarif", "--ignore", "ACP000", *args])
    return done.exit_code, json.loads(done.stdout)


def test_findings_are_a_valid_sarif_log(validator: jsonschema.Draft4Validator) -> None:
    status, log = sarif(str(SAMPLE), "--max-latency", "*=max:1ms")
    assert status == 1
    assert sorted(validator.iter_errors(log), key=str) == []
    (run,) = log["runs"]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert "ACP001" in rules
    assert rules[-1] == "LAT001"
    results = run["results"]
    assert {r["ruleId"] for r in results} >= {"ACP001", "LAT001"}
    first = results[0]
    assert rules[first["ruleIndex"]] == first["ruleId"]
    assert first["level"] == "error"
    (location,) = first["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == str(SAMPLE)
    assert location["logicalLocations"][0]["name"].startswith("connection 1 #")
    assert first["message"]["text"].startswith(location["logicalLocations"][0]["name"] + ": ")
    fingerprints = [r["partialFingerprints"]["acpProxyFinding/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    assert sarif(str(SAMPLE), "--max-latency", "*=max:1ms")[1] == log  # stable
    assert list(validator.iter_errors({**log, "version": "2.0.0"}))  # the schema does refuse


def test_a_clean_database_is_a_valid_log_with_no_results(
    validator: jsonschema.Draft4Validator, db_path: Path
) -> None:
    write_recording(db_path, [*v1(), PROMPT, res(2, {"stopReason": "end_turn"})], label="ok")
    status, log = sarif("--db", str(db_path), "ok")
    assert status == 0
    assert list(validator.iter_errors(log)) == []
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["artifacts"] == [{"location": {"uri": str(db_path)}}]


def test_peer_text_in_a_message_stays_data(
    validator: jsonschema.Draft4Validator, db_path: Path
) -> None:
    write_recording(db_path, [*v1(), (ERR, b"x\n"), PROMPT, res(2, {"stopReason": "\x1b[2Jx"})])
    status, log = sarif("--db", str(db_path))
    assert status == 1
    assert list(validator.iter_errors(log)) == []
    messages = [result["message"]["text"] for result in log["runs"][0]["results"]]
    assert not any("\x1b" in message for message in messages)
    assert any("\\x1b[2J" in message for message in messages)  # shown as an escape
