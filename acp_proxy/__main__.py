"""``python -m acp_proxy``: the same as the ``acp-proxy`` command."""

from __future__ import annotations

from acp_proxy.cli.entry import main

if __name__ == "__main__":
    main()
