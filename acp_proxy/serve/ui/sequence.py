"""The sequence diagram's arrows: protocol frames in order, a run of chunks folded into one.

Rules:
- Runs are the timeline's (``rows.chunk_key``): consecutive chunk updates of one direction,
  session, update kind and message id become one arrow that says how many frames it holds.
- Sans-I/O: the caller reads the frames (bounded pages) and feeds them; ``Folder`` keeps the run
  open across pages, so a page boundary never splits a run the page already drew (the
  continuation is reported as growing the last arrow).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from acp_proxy.serve.ui.rows import chunk_key


def fold(
    frames: Iterable[Mapping[str, Any]], open_key: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Arrows of ``frames`` (summaries in seq order); ``open_key``: the run the previous page
    ended in. Returns the arrows and the run this page ends in.

    An arrow is the first frame's summary with ``count`` and ``last_seq``; an arrow that
    continues the previous page's last run has ``continues`` set.
    """
    arrows: list[dict[str, Any]] = []
    key = open_key
    for frame in frames:
        this = chunk_key(frame["direction"], frame["session_id"], frame["update_kind"],
                         frame["message_id"])  # fmt: skip
        if this is not None and this == key:
            if arrows:
                arrows[-1]["count"] += 1
                arrows[-1]["last_seq"] = frame["seq"]
            else:
                arrows.append({**frame, "count": 1, "last_seq": frame["seq"], "continues": True})
        else:
            arrows.append({**frame, "count": 1, "last_seq": frame["seq"]})
        key = this
    return arrows, key
