"""How ``--help`` is laid out: the command map and text wrapped without breaking paths.

Rules:
- ``acp-proxy --help`` lists the commands in ``SECTIONS``, by what a user wants to do, each
  with a one-line summary that is a whole sentence. Every command is in exactly one section
  (tests/cli/test_help.py); the summaries are written here, so the map is shown without
  importing a single command module.
- Help text is wrapped at spaces only: a word is never broken at a hyphen nor cut when too
  long, so a default such as ``~/.local/share/acp-proxy/recordings.sqlite`` can be copied
  from the help as it is. Otherwise as click wraps: paragraphs are rewrapped keeping their
  indentation, a paragraph that starts with a ``\\b`` line is kept line for line.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

import click

__all__ = ["EXAMPLES", "SECTIONS", "UnbrokenContext", "UnbrokenFormatter", "unbroken"]

SECTIONS: Sequence[tuple[str, Sequence[tuple[str, str]]]] = (
    ("Record and replay", (
        ("record", "Run an agent behind the proxy and record every frame."),
        ("replay", "Answer a client as the recorded agent did."),
        ("demo", "Record a real ACP conversation and say what it holds."),
    )),
    ("Look", (
        ("ls", "List the recorded connections and their sessions."),
        ("show", "Print a recording's frames, one line each."),
        ("tail", "Print a recording's last frames, or follow it live."),
        ("stats", "Time every prompt turn, or every method."),
        ("search", "Find text or a pattern in the frames of every recording."),
    )),
    ("Check and compare", (
        ("check", "Check recordings against the ACP spec's rules."),
        ("diff", "Compare two recordings or sessions message by message."),
        ("schemas", "Install and list the ACP JSON Schemas that check uses."),
    )),
    ("Share", (
        ("export", "Write a recording as JSONL, Markdown or HTML, or a trace."),
        ("import", "Load an export, a bundle or another tool's capture."),
        ("bundle", "Write a redacted bug-report bundle of a recording."),
        ("redact", "Write a recording as JSONL with its secrets masked."),
    )),
    ("Serve", (
        ("ui", "Serve a live web inspector of the recordings."),
        ("mcp", "Serve the recordings to a coding agent over MCP."),
        ("datasette-metadata", "Print Datasette metadata for the database."),
    )),
    ("Tidy and set up", (
        ("wrap", "Put the proxy in front of an agent in editor settings."),
        ("unwrap", "Take the proxy out of an editor's agent entry."),
        ("delete", "Delete recordings with their frames and findings."),
        ("prune", "Remove old recordings, keeping the newest."),
    )),
)  # fmt: skip

EXAMPLES = (
    ("acp-proxy record -- my-agent --acp", "run an agent and record it"),
    ("acp-proxy ls", "what has been recorded"),
    ("acp-proxy show --method 'session/*'", "the newest one's session frames"),
    ("acp-proxy check --all", "every recording against the spec"),
)


def _wrap(text: str, width: int, first: str = "", rest: str = "") -> str:
    """``text`` wrapped to ``width`` at spaces only (see the module rules)."""
    paragraphs: list[list[str]] = [[]]
    for line in text.expandtabs().splitlines():
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    out: list[str] = []
    for number, lines in enumerate(p for p in paragraphs if p):
        lead = first if number == 0 else rest
        if lines[0].strip() == "\b":
            out.append("\n".join(rest + line for line in lines[1:]))
            continue
        own = " " * (len(lines[0]) - len(lines[0].lstrip()))
        joined = " ".join(line.strip() for line in lines)
        wrapper = textwrap.TextWrapper(
            max(width, 11), initial_indent=lead + own, subsequent_indent=rest + own,
            break_on_hyphens=False, break_long_words=False, replace_whitespace=False,
        )  # fmt: skip
        out.append(wrapper.fill(joined))
    return "\n\n".join(out)


class UnbrokenFormatter(click.HelpFormatter):
    """click's help formatter, wrapping at spaces only."""

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        self.write(_wrap(text, self.width, indent, indent) + "\n")

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        rows = list(rows)
        first_width = min(max((len(term) for term, _ in rows), default=0), col_max)
        column = first_width + col_spacing
        indent = " " * self.current_indent
        for term, definition in rows:
            self.write(f"{indent}{term}")
            if not definition:
                self.write("\n")
                continue
            if len(term) <= first_width:
                self.write(" " * (column - len(term)))
            else:
                self.write("\n" + " " * (column + self.current_indent))
            text_width = max(self.width - column - 2, 10)
            lines = _wrap(definition, text_width).splitlines() or [""]
            self.write(lines[0] + "\n")
            for line in lines[1:]:
                self.write((f"{' ' * (column + self.current_indent)}{line}" if line else "") + "\n")


class UnbrokenContext(click.Context):
    formatter_class = UnbrokenFormatter


def unbroken(command: click.Command) -> click.Command:
    """``command`` (and, for a group, its subcommands) helped by ``UnbrokenFormatter``."""
    command.context_class = UnbrokenContext
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            unbroken(sub)
    return command
