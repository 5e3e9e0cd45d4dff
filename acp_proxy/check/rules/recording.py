"""Sans-I/O rule on the recording itself: one that lost frames says so (REC001).

Rules:
- A recording is checked for what it holds; frames it lost (``frames_lost``, ``bytes_lost``
  and the reasons in ``error``, docs/recording-format.md) are frames no rule could look at,
  so an incomplete recording is an error of its own, reported once at the end.
- The losses come with the connection (``Context.losses``); a live check has none.
"""

from __future__ import annotations

from acp_proxy.check.base import ERROR, Rule, RuleInfo
from acp_proxy.plural import counted, noun


class RecordingComplete(Rule):
    info = RuleInfo(
        "REC001", ERROR, "The recording holds every frame that crossed",
        "docs/recording-format.md (frames_lost, status)",
        "Frames were left out of the recording (see the reason): give the recorder room "
        "(--max-recorder-wait, a temporary folder with space, a writable database) and record "
        "again.",
    )  # fmt: skip

    def finish(self) -> None:
        losses = self.context.losses
        if losses is None or not (losses.frames or losses.size):
            return
        why = f": {losses.reason}" if losses.reason else ""
        self.report(
            None, None,
            f"the recording is incomplete: {counted(losses.frames, 'frame')} "
            f"({counted(losses.size, 'byte')}) {noun(losses.frames, 'was', 'were')} "
            f"not recorded{why}",
        )  # fmt: skip


RECORDING_RULES: tuple[type[Rule], ...] = (RecordingComplete,)
