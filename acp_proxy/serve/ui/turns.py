"""Quick reads first: the background work of the inspector waits while a short read that a
screen is waiting for is on its way.

Rules:
- A quick read (``QUICK`` lane in app.py: a connection's row, a timeline's first rows, a frame,
  its place) is counted from the moment its request is routed until it is answered.
- Background work (indexing ahead of what a page asked for, reading a long transcript on)
  calls ``background_turn`` before each of its steps: it waits while any quick read is
  counted, at most until its own deadline, so nothing waits for ever. A step in progress is
  not interrupted: steps are short.
- The counter is shared by the event loop (which counts) and worker threads (which wait).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

LONGEST_WAIT_S = 1.0


class QuickFirst:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._quick = 0

    @contextlib.contextmanager
    def quick(self) -> Iterator[None]:
        """Count a quick read while the block runs."""
        with self._changed:
            self._quick += 1
        try:
            yield
        finally:
            with self._changed:
                self._quick -= 1
                if not self._quick:
                    self._changed.notify_all()

    def busy(self) -> bool:
        with self._changed:
            return self._quick > 0

    def background_turn(self, longest_s: float = LONGEST_WAIT_S) -> bool:
        """Wait (at most ``longest_s``) until no quick read is counted; True if none is."""
        if longest_s <= 0:
            return not self.busy()
        with self._changed:
            return self._changed.wait_for(lambda: not self._quick, longest_s)
