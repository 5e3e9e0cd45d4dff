"""Sans-I/O: what ``--since T`` means, as a wall-clock time in nanoseconds.

Rules:
- ``T`` is a duration back from now (``90s``, ``15m``, ``2h``, ``3d``, ``1w``), ``today`` or
  ``yesterday`` (local midnight), or an ISO 8601 date or date and time (``2026-11-30``,
  ``2026-11-30T14:00``, with ``Z`` or an offset; without one it is local time).
- The caller gives the clock (``now_ns``) and the local zone is the process's; anything else
  is a ``ValueError`` naming the accepted forms.
"""

from __future__ import annotations

import datetime as dt
import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
FORMS = "a duration (90s, 15m, 2h, 3d, 1w), today, yesterday, or an ISO date/time"


def since_ns(text: str, now_ns: int) -> int:
    """The moment ``text`` names (see the module rules)."""
    value = text.strip().lower()
    duration = _DURATION.fullmatch(value)
    if duration:
        return now_ns - int(float(duration[1]) * _SECONDS[duration[2]] * 1e9)
    now = dt.datetime.fromtimestamp(now_ns / 1e9).astimezone()
    if value in ("today", "yesterday"):
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        if value == "yesterday":
            midnight -= dt.timedelta(days=1)
        return int(midnight.timestamp()) * 10**9
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a time: use {FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time
    return int(moment.timestamp() * 1e9)
