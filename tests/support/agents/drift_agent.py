"""A tiny ACP agent whose answers can drift: ``python drift_agent.py MODE``.

Modes (standard library only):
- ``same``: initialize, session/new (session ``s-1``), and a prompt answered with one
  ``agent_message_chunk`` "Hello" and ``stopReason: end_turn``;
- ``text``: the chunk says "Goodbye" instead;
- ``missing``: no chunk at all;
- ``extra``: asks ``session/request_permission`` before the chunk (and waits for the answer);
- ``renamed``: as ``same``, but its ``initialize`` result names the agent (``agentInfo``).

``DRIFT_SESSION`` (default ``s-1``) is the session id it mints, so that two runs can mint
different ones, as real agents do.
"""

from __future__ import annotations

import json
import os
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main(mode: str) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, rpc_id = message.get("method"), message.get("id")
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": 1,
                "agentCapabilities": {},
                "authMethods": [],
            }
            if mode == "renamed":
                result["agentInfo"] = {"name": "drift", "version": "2"}
            send({"id": rpc_id, "result": result})
        elif method == "session/new":
            send({"id": rpc_id, "result": {"sessionId": os.environ.get("DRIFT_SESSION", "s-1")}})
        elif method == "session/prompt":
            session = message["params"]["sessionId"]
            if mode == "extra":
                call = {"id": "t-1", "title": "look", "kind": "read", "status": "pending"}
                params = {"sessionId": session, "toolCall": call, "options": []}
                send({"id": 0, "method": "session/request_permission", "params": params})
                sys.stdin.readline()
            if mode != "missing":
                text = "Goodbye" if mode == "text" else "Hello"
                chunk = {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                }
                send(
                    {"method": "session/update", "params": {"sessionId": session, "update": chunk}}
                )
            send({"id": rpc_id, "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    main(sys.argv[1])
