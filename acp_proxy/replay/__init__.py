"""Replay: sans-I/O engines (replay, episodes, go-live, drive) and shell/, their one I/O loop.

Rules: engines take events and a clock and give actions; they import no I/O. Only shell/ touches
descriptors, processes and signals.
"""
