"""Run an example client (the Python SDK's http_client.py, ws_client.py) against a URL.

usage: run_example_client.py EXAMPLE.py URL

The examples connect to a hard-coded ``localhost:8000/acp``; this runs the example's own code
as ``__main__`` with that one address replaced by URL (and fails if it is not there).
"""

from __future__ import annotations

import re
import sys


def main() -> None:
    example, url = sys.argv[1], sys.argv[2]
    with open(example, encoding="utf-8") as file:
        source = file.read()
    pattern = r"(?:http|ws)://localhost:8000/acp"
    if not re.search(pattern, source):
        sys.exit(f"{example} connects nowhere this script knows")
    code = compile(re.sub(pattern, url, source), example, "exec")
    exec(code, {"__name__": "__main__", "__file__": example})


if __name__ == "__main__":
    main()
