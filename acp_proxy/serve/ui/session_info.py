"""The session info panel: what both sides declared, side by side.

Rules:
- Read from the recorded messages themselves: the ``initialize`` exchange (versions, both
  sides' capabilities, auth methods, the negotiated protocol version), the answers to
  ``session/new``, ``session/load`` and ``session/resume`` (modes, models, config options), the
  transcript model's per-session state (commands, current mode) and extension methods.
- Capabilities are flattened into ``(path, client value, agent value)`` rows so the page shows
  a matrix; ``_meta`` keys anywhere in them are listed as extensions.
- Recorded values stay data: passed on as JSON values, for the page to insert as text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from acp_proxy.protocol import acp
from acp_proxy.protocol.decode import json_object

SESSION_METHODS = ("session/new", "session/load", "session/resume", "session/fork")
SESSIONS_SHOWN = 50


def _json(raw: bytes | None) -> dict[str, Any] | None:
    return None if raw is None else json_object(raw)


def flatten(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Leaves of a capability object as ``(dotted path, value)``; objects are walked."""
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from flatten(inner, f"{path}.{key}" if path else str(key))
    elif path:
        yield path, value


def capability_matrix(client: Any, agent: Any) -> list[tuple[str, Any, Any]]:
    """Rows ``(path, client's value, agent's value)``; None where a side declared nothing."""
    left, right = dict(flatten(client)), dict(flatten(agent))
    paths = list(left) + [p for p in right if p not in left]
    return [(p, left.get(p), right.get(p)) for p in paths]


def build(
    exchanges: list[tuple[int, str, bytes, bytes | None]],
    sessions: list[Any],
    extension_methods: list[tuple[str, str, int]],
) -> dict[str, Any]:
    """The panel's data from the requests with their answers, the transcript's sessions and
    the extension methods seen."""  # fmt: skip
    init = next((x for x in exchanges if x[1] == "initialize"), None)
    request = _json(init[2]) if init else None
    answer = _json(init[3]) if init else None
    params = request.get("params") if request else None
    result = answer.get("result") if answer else None
    params = params if isinstance(params, dict) else {}
    result = result if isinstance(result, dict) else {}
    client_caps = params.get("clientCapabilities", params.get("capabilities"))
    agent_caps = result.get("agentCapabilities", result.get("capabilities"))
    matrix = capability_matrix(client_caps, agent_caps)
    meta = [p for p, _, _ in matrix if p == "_meta" or "._meta" in p or p.startswith("_meta.")]
    opened: list[dict[str, Any]] = []
    for seq, method, raw, answered in exchanges:
        if method not in SESSION_METHODS or len(opened) >= SESSIONS_SHOWN:
            continue
        sent = _json(raw) or {}
        got = (_json(answered) or {}).get("result")
        got = got if isinstance(got, dict) else {}
        sent_params = sent.get("params")
        sent_params = sent_params if isinstance(sent_params, dict) else {}
        opened.append({
            "seq": seq, "method": method,
            "session_id": got.get("sessionId", sent_params.get("sessionId")),
            "modes": got.get("modes"), "models": got.get("models"),
            "config_options": got.get("configOptions"), "answered": answered is not None,
        })  # fmt: skip
    states = [{
        "session_id": s.session_id, "mode": s.mode, "commands": s.commands,
        "config_options": s.config_options, "state": s.state,
    } for s in sessions[:SESSIONS_SHOWN]]  # fmt: skip
    return {
        "initialize_seq": init[0] if init else None,
        "client": {"info": acp.client_info(params),
                   "protocol_version": params.get("protocolVersion")},
        "agent": {"info": acp.agent_info(result),
                  "protocol_version": result.get("protocolVersion")},
        "negotiated_version": acp.protocol_version(result),
        "auth_methods": result.get("authMethods"),
        "capabilities": matrix, "meta": meta,
        "sessions": opened, "session_states": states,
        "extension_methods": [{"method": m, "direction": d, "count": n}
                              for m, d, n in extension_methods],
    }  # fmt: skip
