"""The recording database in Datasette, with the metadata of ``acp-proxy datasette-metadata``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.fixtures_transcript import V2_WALKTHROUGH
from tests.support.helpers import write_recording


def fetch(db_path: Path, metadata: dict[str, Any], paths: list[str]) -> list[Any]:
    from datasette.app import Datasette

    async def get_all() -> list[Any]:
        app = Datasette([str(db_path)], metadata=metadata)
        found = []
        for path in paths:
            response = await app.client.get(path)
            assert response.status_code == 200, (path, response.text[:500])
            found.append(response.json())
        return found

    return asyncio.run(get_all())


def test_datasette_serves_the_views_and_canned_queries(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    write_recording(db_path, V2_WALKTHROUGH, label="v2")
    result = CliRunner().invoke(cli, ["datasette-metadata", "--db", str(db_path)])
    assert result.exit_code == 0
    metadata = json.loads(result.output)
    assert set(metadata["databases"]) == {"rec"}
    base = "/rec"
    timeline, turns, slow, facets, served = fetch(
        db_path,
        metadata,
        [
            f"{base}/timeline.json?connection_id=1&_shape=array",
            f"{base}/prompt_turns.json?_shape=array",
            f"{base}/slowest_requests.json?_shape=array",
            f"{base}/frames.json?_facet=kind&connection_id=2",
            "/-/metadata.json",
        ],
    )
    assert [r["seq"] for r in timeline] == list(range(1, len(V1_CONVERSATION) + 1))
    assert [(t["connection_id"], t["stop_reason"]) for t in turns] == [
        (1, "end_turn"),
        (2, "end_turn"),
    ]
    assert slow[0]["latency_ms"] >= slow[-1]["latency_ms"]
    kinds = {f["value"] for f in facets["facet_results"]["kind"]["results"]}
    assert kinds == {"request", "response", "notification"}
    assert served["databases"]["rec"]["queries"]["conversation"]["title"]
    conversation = fetch(
        db_path, metadata, [f"{base}/conversation.json?connection_id=2&_shape=array"]
    )[0]
    assert conversation[0]["said"] == "Can you analyze this code for potential issues?"
