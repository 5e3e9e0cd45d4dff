"""The live stream's watcher (serve/ui/events.py) with streams that come and go: a stream
whose page closed it is cancelled while it waits, and the streams beside it go on waiting
for the next snapshot as if nothing happened (a page switching from the list to a timeline
closes one stream as it opens the next)."""

from __future__ import annotations

import random
from typing import cast

import anyio
import pytest

from acp_proxy.serve.ui.events import Snapshot, Watch
from acp_proxy.serve.ui.state import Inspector

pytestmark = pytest.mark.timeout(60)


def test_streams_cancelled_while_they_wait_leave_the_others_waiting() -> None:
    rounds, streams = 100, 20
    shuffle = random.Random(7)

    async def scenario() -> list[list[int]]:
        watch = Watch(cast(Inspector, None))  # waiting and publishing read no database
        seen: list[list[int]] = []
        for generation in range(1, rounds + 1):
            watch.publish(Snapshot(generation))
            got: list[int] = []
            async with anyio.create_task_group() as tasks:
                scopes = [anyio.CancelScope() for _ in range(streams)]

                async def wait(
                    scope: anyio.CancelScope, stays: bool, g: int = generation, got: list[int] = got
                ) -> None:
                    with scope:
                        found = (await watch.next(g, 10)).generation
                    if stays:
                        got.append(found)

                # Streams that stay and streams that leave start and are cancelled in turn,
                # each a few steps of the event loop after the one before.
                for n, scope in enumerate(scopes):
                    tasks.start_soon(wait, scope, n % 2 == 0)
                    for _ in range(shuffle.randrange(3)):
                        await anyio.sleep(0)
                    if n % 2:
                        scope.cancel()
                await anyio.sleep(0.001)
                watch.publish(Snapshot(generation + 1))
            seen.append(got)
        return seen

    assert anyio.run(scenario) == [[g + 1] * (streams // 2) for g in range(1, rounds + 1)]
