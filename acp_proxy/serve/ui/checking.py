"""The inspector's rule checker: one connection checked in a process of its own.

Rules:
- The page's findings come from the same rule engine as ``acp-proxy check`` (``ScopeCheck``,
  the installed schemas when the server has them), so the page and the command agree.
- The check runs in a child process (``python -m acp_proxy.serve.ui.checking DB CONNECTION
  SCHEMAS FINDINGS``), at the lowest CPU priority: checking a long recording holds an
  interpreter for many seconds, and in the server's own it made every request wait its turn
  (and, at low priority, wait for a thread the system had set aside). The server only reads
  its lines and its findings file.
- The child writes its findings into a file of the server's (``store/finding_file.py``), a
  step's in one transaction, and then says ``progress JSON`` on stdout (``checked_seq``,
  ``finished``, ``found``: how many so far); ``failed JSON`` says why the recording could not
  be checked. The server keeps no finding in memory: it reads the file, a frame's own or those
  of a range of frames, and passes their JSON on unparsed.
- The child ends when the check has finished, when the recording cannot be read, or when its
  stdin closes (the server has gone). A child that stops otherwise is a failure the page is
  told about, with the last line it said on stderr.
- ``CheckRun`` is the check itself, usable in this process too (its findings as dicts). The
  rule engine is imported by the check, so the server itself never loads it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from acp_proxy.errors import AcpProxyError
from acp_proxy.store import readers as store_read
from acp_proxy.store.finding_file import FindingReader, FindingWriter

if TYPE_CHECKING:
    from acp_proxy.check.base import RuleInfo

CHECK_STEP = 500
CHECK_PAUSE_S = 0.2


@cache
def _rule_info() -> dict[str, RuleInfo]:
    # The rule engine is imported where a check runs (the child), not by the server itself.
    from acp_proxy.check.engine import RULES

    return {info.id: info for info in RULES}


def finding_record(finding: Any) -> dict[str, Any]:
    """A finding as the page shows it: the engine's words and the rule's summary, fix, source."""
    info = _rule_info().get(finding.rule)
    return {
        "seq": finding.seq, "direction": finding.direction, "rule": finding.rule,
        "severity": finding.severity, "message": finding.message,
        "summary": info.summary if info else None, "fix": info.fix if info else None,
        "source": info.source if info else None,
    }  # fmt: skip


def load_schemas() -> tuple[Any, Any]:
    """The compiled schemas and their documents, or ``(None, None)`` when none are installed."""
    from acp_proxy.check.schema_files import load_documents
    from acp_proxy.check.schemas import SchemaBook, SchemaError

    try:
        documents = load_documents()
        return SchemaBook(documents, "installed"), documents
    except (AcpProxyError, SchemaError, ValueError):
        return None, None


def lower_priority(whole_process: bool = False) -> None:
    """The lowest CPU priority for this thread (Linux: nice is per thread) or this process, so
    that checking a fast live recording never takes CPU from the proxy forwarding it."""
    native = getattr(threading, "get_native_id", None)
    if not hasattr(os, "setpriority") or (native is None and not whole_process):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0 if whole_process else native(), 19)  # type: ignore[misc]
    except OSError:
        return


class CheckRun:
    """One connection's check, step by step (``CHECK_STEP`` frames at a time)."""

    def __init__(self, db: store_read.Database, connection_id: int, schemas: Any) -> None:
        from acp_proxy.check.scope_check import ScopeCheck
        from acp_proxy.store.refs import connection_scope

        self.connection_id = connection_id
        self.check = ScopeCheck(connection_scope(db, connection_id), schemas)

    def step(self, db: store_read.Database) -> list[dict[str, Any]]:
        """Check the next frames (and finish once an ended connection is checked to its end);
        the new findings. A damaged file raises ``UnreadableRecording``."""
        check = self.check
        if check.finished:
            return []
        before = len(check.findings)
        status = store_read.status(db, self.connection_id)  # read first: frames land before it
        if check.step(db, CHECK_STEP) < CHECK_STEP and status != "running":
            check.finish(db)
        return [finding_record(f) for f in check.findings[before:]]

    def caught_up(self, db: store_read.Database) -> bool:
        """Every frame committed so far is checked."""
        check = self.check
        return check.finished or check.checked_seq >= store_read.last_seq(db, self.connection_id)


# --------------------------------------------------------------------------- the server's side


@dataclass
class CheckProcess:
    """The child checking one connection, and what it has said so far."""

    process: subprocess.Popen[bytes]
    findings: FindingReader
    found: int = 0  # how many findings the file holds
    checked_seq: int = 0
    finished: bool = False
    failed: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    reader: threading.Thread | None = None
    closing: bool = False  # ended by the server: not a failure

    @classmethod
    def start(cls, path: Path, connection_id: int, schemas: bool, found: Path) -> CheckProcess:
        """Check connection ``connection_id`` of ``path``, its findings written to ``found``."""
        argv = [sys.executable, "-m", "acp_proxy.serve.ui.checking", str(path),
                str(connection_id), "1" if schemas else "0", str(found)]  # fmt: skip
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_child_env(),
        )  # fmt: skip
        running = cls(process, FindingReader(found))
        running.reader = threading.Thread(
            target=running._read, name=f"acp-proxy-ui-check-{connection_id}", daemon=True
        )
        running.reader.start()
        return running

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        with out:
            self._read_lines(out)
        code = self.process.wait()
        with self.lock:
            if not (self.finished or self.closing) and self.failed is None:
                self.failed = f"the rule checker stopped (exit {code}){_last_line(self.process)}"

    def _read_lines(self, out: IO[bytes]) -> None:
        for line in out:
            head, _, body = line.rstrip(b"\n").partition(b" ")
            if head == b"progress":
                said = orjson.loads(body)
                with self.lock:
                    self.checked_seq, self.finished = said["checked_seq"], said["finished"]
                    self.found = said["found"]
                self.findings.writer_said()
            elif head == b"failed":
                with self.lock:
                    self.failed = str(orjson.loads(body))

    def close(self) -> None:
        """End the child (if it has not ended) and its reader."""
        with self.lock:
            self.closing = True
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.reader is not None:
            self.reader.join()
        for pipe in (self.process.stdin, self.process.stderr):
            if pipe is not None:
                pipe.close()
        self.findings.close()


def _last_line(process: subprocess.Popen[bytes]) -> str:
    err = process.stderr
    said = err.read().decode(errors="replace").strip().splitlines() if err is not None else []
    return f": {said[-1]}" if said else ""


def _child_env() -> dict[str, str]:
    """This process's environment, with this package importable from wherever it was run."""
    environ = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, environ.get("PYTHONPATH")) if p)
    return environ


# --------------------------------------------------------------------------- the child


def _end_with_stdin(fd: int) -> None:
    """The server closed our stdin (it has gone): end at once. (The file descriptor itself is
    read: a buffered stdin read by a daemon thread would stop the interpreter's own end.)"""
    while os.read(fd, 4096):
        pass
    os._exit(0)


def run_child(
    path: Path, connection_id: int, schemas: bool, out: IO[bytes], found_path: Path
) -> int:
    writer = FindingWriter(found_path)
    found = 0
    try:
        db = store_read.open_for_reading(path)
        run = CheckRun(db, connection_id, load_schemas()[0] if schemas else None)
        while True:
            new = run.step(db)
            writer.add(new)  # committed before the progress that counts them is said
            found += len(new)
            check = run.check
            progress = {"checked_seq": check.checked_seq, "finished": check.finished,
                        "found": found}  # fmt: skip
            out.write(b"progress " + orjson.dumps(progress) + b"\n")
            out.flush()
            if check.finished:
                return 0
            if run.caught_up(db):  # a live recording: look again in a moment
                time.sleep(CHECK_PAUSE_S)
    except AcpProxyError as error:  # a damaged file, or the connection is gone
        out.write(b"failed " + orjson.dumps(str(error)) + b"\n")
        out.flush()
        return 0
    except BrokenPipeError:
        return 0
    finally:
        writer.close()


def main(argv: list[str]) -> int:
    lower_priority(whole_process=True)  # first: the rule engine's import and the schemas too
    threading.Thread(target=_end_with_stdin, args=(sys.stdin.fileno(),), daemon=True).start()
    path, connection_id, schemas = Path(argv[0]), int(argv[1]), argv[2] == "1"
    return run_child(path, connection_id, schemas, sys.stdout.buffer, Path(argv[3]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
