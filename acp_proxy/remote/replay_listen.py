"""The replays ``replay --listen`` serves: one fresh engine per remote connection.

Rules:
- A recording of one connection is served by the plain replay engine (replay/engine.py), as
  ``replay`` serves a stdio client; a file of several episodes by the episodes engine
  (replay/episodes.py), without going live. Each connection gets its own engine, from the
  script built once, started when the connection opens.
- Every agent frame is served as one line (replay.script.as_lines: a remote recording's
  frames are whole messages without a line break), which the routing cuts back into messages.
- The summary of each connection is replay's paragraph (replay/report.py), naming the
  recording and the remote connection.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from acp_proxy.remote.replay_recording import ReplayRecording
from acp_proxy.remote.replay_server import Listener, Served
from acp_proxy.replay.engine import Options, Replay
from acp_proxy.replay.match import Matcher
from acp_proxy.replay.script import Script, as_lines
from acp_proxy.stderr import Reporter


def listener_for(
    scripts: Sequence[Script], what: str, matcher: Matcher, options: Options, report: Reporter,
    recording: ReplayRecording | None = None,
) -> Listener:  # fmt: skip
    """The listener serving ``scripts`` (one recording, or episodes), recording what it
    serves into ``recording`` when given (``--record``)."""
    scripts = [as_lines(script) for script in scripts]

    def make() -> Served:
        if len(scripts) == 1:
            return _single(scripts[0], what, matcher, options)
        return _episodes(scripts, what, matcher, options)

    return Listener(make, report, timeout=options.timeout_ns / 1e9, recording=recording)


def _single(script: Script, what: str, matcher: Matcher, options: Options) -> Served:
    from acp_proxy.replay.modes import ForClient
    from acp_proxy.replay.report import summary

    replay = Replay(script, matcher, options, time.monotonic_ns())
    return Served(
        ForClient(replay), lambda where: summary(replay, f"{what}, {where}"),
        lambda: replay.diverged,
    )  # fmt: skip


def _episodes(scripts: Sequence[Script], what: str, matcher: Matcher, options: Options) -> Served:
    from acp_proxy.replay.episodes import Episodes
    from acp_proxy.replay.modes import ForEpisodes
    from acp_proxy.replay.report import episodes_summary

    engine = Episodes(list(scripts), matcher, options, time.monotonic_ns(), live=False, ignore=())
    return Served(
        ForEpisodes(engine), lambda where: episodes_summary(engine, f"{what}, {where}"),
        lambda: engine.diverged,
    )  # fmt: skip
