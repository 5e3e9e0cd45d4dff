"""Sans-I/O: the one-paragraph summary a replay prints on stderr when it ends.

Rules:
- One paragraph, plain words: what was sent (frames, responses with the client's ids, agent
  requests), what was dropped (notices) or folded (history replay), how many client messages
  matched, the requests left unanswered as the recording left them, why the replay ended
  (said once: the note that ended it is not repeated among the divergences), and whether
  anything diverged, with the first few other notes.
- The same text goes into the replay's own recording (``--record``) as a stderr line.
- ``exit_status``: 0 when nothing diverged, 1 otherwise.
- ``episodes_summary`` says the same of a replay that follows episodes (episodes.py):
  which episodes it followed and, when it went live, how the real agent was caught up and
  what was relayed, or why catch-up failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_proxy.plural import counted, noun
from acp_proxy.replay.engine import Replay

if TYPE_CHECKING:
    from acp_proxy.replay.episodes import Episodes

SHOWN_NOTES = 3


def summary(replay: Replay, what: str) -> str:
    """The paragraph for ``replay`` of ``what`` (e.g. "connection 3 (demo)")."""
    parts = [
        f"replay of {what}: sent {counted(replay.sent, 'agent frame')} "
        f"({counted(replay.responses, 'response')} with the client's ids, "
        f"{counted(replay.agent_requests, 'agent request')} re-issued)",
        f"dropped {counted(replay.notices, 'notice')}",
    ]
    if replay.folded:
        parts.append(f"folded {counted(replay.folded, 'history frame')} into materialized updates")
    parts.append(f"matched {replay.matched} of {counted(replay.received, 'client message')}")
    if replay.unanswered:
        parts.append(
            f"left {counted(replay.unanswered, 'request')} unanswered, as the recording never "
            "answered them"
        )
    notes = [n for n in replay.notes if n.text != replay.ending]
    ending_note = next((n for n in replay.notes if n.text == replay.ending), None)
    where = f" (recorded seq {ending_note.seq})" if ending_note and ending_note.seq else ""
    text = ", ".join(parts) + f". Ended{where}: {replay.ending or 'interrupted'}."
    if replay.frames_left:
        left = replay.frames_left
        text += f" {counted(left, 'recorded agent frame')} {noun(left, 'was', 'were')} not sent."
    if not replay.diverged:
        return text + " No divergence."
    if not notes:
        return text + " Diverged from the recording."
    shown = "; ".join(
        n.text if n.seq is None else f"recorded seq {n.seq}: {n.text}" for n in notes[:SHOWN_NOTES]
    )
    more = f" (and {len(notes) - SHOWN_NOTES} more)" if len(notes) > SHOWN_NOTES else ""
    return text + f" Diverged: {shown}{more}."


def exit_status(replay: Replay) -> int:
    return 1 if replay.diverged else 0


def episodes_summary(episodes: Episodes, what: str) -> str:
    """The paragraph for a replay of ``what`` that follows episodes (see the module rules)."""
    path = " then ".join(str(number) for number in episodes.path)
    live = episodes.live
    if live is None:
        return summary(episodes.replay, f"{what}, episode {path}")
    replayed = episodes.went_live_after or 0
    text = (
        f"replay of {what}: followed episode {path} for {counted(replayed, 'client message')}; the "
        "next one is in no recorded episode, so the conversation went live"
    )
    if live.failure is not None and live.drive.divergence is not None:
        return (
            f"{text}, but the real agent does not reproduce the recorded conversation up to "
            f"there (re-record it): {live.failure}"
        )
    if live.failure is not None:
        return f"{text}, but the real agent could not take over: {live.failure}."
    drive = live.drive
    return (
        f"{text}: the real agent was caught up ({counted(drive.sent, 'client frame')} sent, "
        f"{counted(drive.matched, 'agent frame')} matched what the client was told), then "
        f"{counted(live.relayed, 'client frame')} {noun(live.relayed, 'was', 'were')} "
        "relayed to it. No divergence."
    )
