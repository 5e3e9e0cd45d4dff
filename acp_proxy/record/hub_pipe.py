"""Sans-I/O: the records on the pipe from a ``RecordingHub`` to its recorder process.

Rules:
- A record is a ``HEADER`` (kind, direction, stream, connection key, exchange seq, monotonic
  ns, payload length) and its payload; hub.py writes them, hub_recorder.py reads them. Both
  import the vocabulary from here, so neither imports the other.
- Codes are fixed numbers: the two processes are always the same code, but a number is never
  reused for another meaning.
"""

from __future__ import annotations

import struct

from acp_proxy.protocol.acp import Direction

# kind, direction, stream, (padding), connection key, exchange seq, monotonic ns, payload length
HEADER = struct.Struct("=BBBxIIQQ")
OPEN, MESSAGE, EXCHANGE, EXCHANGE_SET, UPDATE, CLOSE, LOST, CONFIG = 1, 2, 3, 4, 5, 6, 7, 8
# A line of the agent side's own stderr (a replay's summary): its payload is the line's bytes.
STDERR = 9
DIRECTION_CODES = {Direction.CLIENT_TO_AGENT: 0, Direction.AGENT_TO_CLIENT: 1}
DIRECTIONS_BY_CODE = {code: direction for direction, code in DIRECTION_CODES.items()}
# Which stream a message crossed on (store/remote.py STREAMS), as a code in the header.
STREAM_CODES = {"post": 0, "post_answer": 1, "connection_sse": 2, "session_sse": 3,
                "websocket": 4}  # fmt: skip
STREAMS_BY_CODE = {code: stream for stream, code in STREAM_CODES.items()}
