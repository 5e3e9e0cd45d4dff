"""Sans-I/O: the values a client was told, mapped to the values of the peer now answering it.

Rules:
- Two conversations that differ only in the values peers mint (``sessionId``, ``toolCallId``,
  ``messageId`` ..., normalize.ID_KEYS) and in the JSON-RPC ids of the agent's requests are
  the same conversation. A ``ValueMap`` pairs the values one side used (*told*: what the live
  client was told, or the recording being played) with the other side's (*peer*: another
  recorded episode, or a live agent), learned from pairs of frames that correspond.
- ``learn(told, peer)`` walks both frames in parallel (objects by key, arrays by position) and
  pairs the values under ID_KEYS; an agent request pairs its JSON-RPC id too. The map stays a
  bijection: a pairing that contradicts an earlier one is refused (``learn`` returns False)
  and the earlier one is kept.
- ``to_peer`` rewrites a client frame for the peer: told values become peer values, and the
  id of the client's answer to an agent request becomes the peer request's id. ``to_told``
  rewrites a peer's frame for the client: the other way round. Values never learned (a
  session only the peer knows) pass through unchanged; so do the client's own request ids,
  which both sides answer with as they are.
- Bytes: a frame nothing was rewritten in keeps its exact bytes; a rewritten one is compact
  JSON with its newline. Frames that are not JSON pass through. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import orjson

from acp_proxy.protocol.jsonrpc import NOT_JSON, id_key, is_request, parse_json
from acp_proxy.protocol.normalize import ID_KEYS


class ValueMap:
    """Told values <-> peer values (see the module rules)."""

    __slots__ = ("_requests", "_requests_back", "_to_peer", "_to_told")

    def __init__(self) -> None:
        self._to_peer: dict[Any, Any] = {}
        self._to_told: dict[Any, Any] = {}
        self._requests: dict[tuple[str, Any], Any] = {}  # told agent request id -> peer id
        self._requests_back: dict[tuple[str, Any], Any] = {}

    @property
    def empty(self) -> bool:
        return not self._to_peer and not self._requests

    @property
    def values(self) -> dict[Any, Any]:
        """Told value -> peer value, for every minted value learned so far."""
        return dict(self._to_peer)

    def learn(self, told: Any, peer: Any) -> bool:
        """Pair the minted values (and agent request id) of two corresponding frames."""
        consistent = self._pair(told, peer)
        if is_request(told) and is_request(peer):
            consistent &= self.learn_request(told["id"], peer["id"])
        return consistent

    def learn_request(self, told_id: Any, peer_id: Any) -> bool:
        told_key, peer_key = id_key(told_id), id_key(peer_id)
        known = self._requests.get(told_key)
        if known is not None:
            return bool(id_key(known) == peer_key)
        self._requests[told_key] = peer_id
        self._requests_back[peer_key] = told_id
        return True

    def knows_peer_request(self, peer_id: Any) -> bool:
        """Whether the peer's request id already has a told id."""
        return id_key(peer_id) in self._requests_back

    def _pair(self, told: Any, peer: Any) -> bool:
        consistent = True
        if isinstance(told, dict) and isinstance(peer, dict):
            for key, item in told.items():
                if key not in peer:
                    continue
                if key in ID_KEYS and isinstance(item, str | int):
                    consistent &= self._bind(item, peer[key])
                else:
                    consistent &= self._pair(item, peer[key])
        elif isinstance(told, list) and isinstance(peer, list):
            for left, right in zip(told, peer, strict=False):
                consistent &= self._pair(left, right)
        return consistent

    def _bind(self, told: Any, peer: Any) -> bool:
        if not isinstance(peer, str | int):
            return False
        known, back = self._to_peer.get(told), self._to_told.get(peer)
        if known is None and back is None:
            self._to_peer[told], self._to_told[peer] = peer, told
            return True
        return known == peer and back == told

    def to_peer(self, value: Any) -> Any:
        """A copy of a client frame with told values replaced by the peer's."""
        out = _rewrite(value, self._to_peer)
        if isinstance(out, dict) and "method" not in out and "id" in out:
            peer_id = self._requests.get(id_key(out["id"]))
            if peer_id is not None:
                out["id"] = peer_id
        return out

    def to_told(self, value: Any) -> Any:
        """A copy of a peer's frame with its values replaced by the ones the client knows."""
        out = _rewrite(value, self._to_told)
        if is_request(out):
            told_id = self._requests_back.get(id_key(out["id"]))
            if told_id is not None:
                out["id"] = told_id
        return out

    def to_peer_bytes(self, raw: bytes) -> bytes:
        return self._bytes(raw, self.to_peer)

    def to_told_bytes(self, raw: bytes) -> bytes:
        return self._bytes(raw, self.to_told)

    def _bytes(self, raw: bytes, rewrite: Any) -> bytes:
        if self.empty:
            return raw
        value = parse_json(raw)
        if value is NOT_JSON:
            return raw
        out = rewrite(value)
        return raw if out == value else orjson.dumps(out) + b"\n"


def _rewrite(value: Any, mapping: dict[Any, Any]) -> Any:
    if isinstance(value, dict):
        return {
            key: mapping.get(item, item)
            if key in ID_KEYS and isinstance(item, str | int)
            else _rewrite(item, mapping)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rewrite(item, mapping) for item in value]
    return value
