"""The command line: click wiring only, one module per command group.

Rules: the only package that imports click; every command is one library call; acp-proxy's own
errors become one line on stderr here and nowhere else; entry.py starts record's agent before
anything slow is imported.
"""
