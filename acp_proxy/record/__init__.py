"""The record hot path: spawn the agent, forward both ways on plain threads, tap each chunk.

Rules: forwarding never waits on anything but the peers for long; the recorder process is fed
through the shared-memory tap and never waited on; nothing here imports anyio or asyncio (the
measured hot path stays on threads); the proxy writes nothing of its own to stdout.
"""
