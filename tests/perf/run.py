"""The acp-proxy benchmark: one command runs every mode against three ways of reaching the
fake agent and prints one Markdown table.

    python -m tests.perf.run [--repeat 5] [--modes small medium large1m large16m ping]
                             [--out DIR] [--proxy 'CMD PREFIX'] [--count MODE=N ...]
                             [--also NAME='CMD PREFIX' ...]

The four wrappers, measured in the same run:

- ``direct``: the client spawns the agent itself (the physical limit of this client and agent);
- ``tee``: tests/perf/tee_wrap.sh, a shell wrapper copying both directions to files (what users
  do today);
- ``relay-only``: tests/perf/relay_only.py, acp-proxy's own forwarding threads with a tap that
  drops every chunk (no recorder): what one relay hop costs before recording costs anything;
- ``acp-proxy``: ``acp-proxy record --db {tmpdir}/r.sqlite --`` (the venv's console script, what
  users run; ``python -m acp_proxy`` when there is none). ``--proxy`` replaces that prefix;
  ``{tmpdir}`` in it becomes a fresh folder per run, deleted afterwards.

``--also NAME='CMD PREFIX'`` adds a column: another proxy command, measured in the same run
as the others (say ``record`` with one piece switched off, tests/perf/variants.py), so that
the two columns' ratios to direct compare within one run.

Repeats are interleaved: each repeat runs every mode, and within a mode every wrapper, in an
order that rotates from repeat to repeat, so drift of a noisy machine hits all of them alike.
A figure is the median over repeats; a ratio to direct is the median over repeats of the ratio
within the same repeat. After each proxy run the database is checked with sqlite3: it must hold
every frame exchanged (``count(*)``) and every byte (``sum(size)``) by the time the proxy has
exited. See tests/perf/README.md for what each row means.

Writes DIR/runs.json (every run, with the machine's load), DIR/table.md (the table), and
DIR/details.md (per mode and wrapper medians); the stderr of the wrappers goes to
DIR/stderr.log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.perf import client

HERE = Path(__file__).resolve().parent
TEE_SCRIPT = HERE / "tee_wrap.sh"
MODES = ("small", "medium", "large1m", "large16m", "ping")
DIRECT, TEE, RELAY, PROXY = "direct", "tee", "relay-only", "acp-proxy"
SQLITE_MAGIC = b"SQLite format 3\x00"

Run = dict[str, Any]


def default_proxy_prefix() -> str:
    script = Path(sys.executable).with_name("acp-proxy")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "acp_proxy"]
    return shlex.join([*head, "record", "--db", "{tmpdir}/r.sqlite", "--"])


@dataclass(frozen=True)
class Wrapper:
    name: str
    prefix: tuple[str, ...]  # may hold {tmpdir}

    def argv(self, tmpdir: str) -> list[str]:
        return [part.replace("{tmpdir}", tmpdir) for part in self.prefix] + client.agent_argv()


def wrappers(proxy_prefix: str, also: Sequence[str] = ()) -> list[Wrapper]:
    chosen = [
        Wrapper(DIRECT, ()),
        Wrapper(TEE, (str(TEE_SCRIPT), "{tmpdir}")),
        Wrapper(RELAY, (sys.executable, "-m", "tests.perf.relay_only", "--")),
        Wrapper(PROXY, tuple(shlex.split(proxy_prefix))),
    ]
    for extra in also:
        name, equals, prefix = extra.partition("=")
        if not equals or not name or name in {w.name for w in chosen}:
            raise SystemExit(f"--also {extra!r}: expected a new NAME='CMD PREFIX'")
        chosen.append(Wrapper(name, tuple(shlex.split(prefix))))
    return chosen


# --- one run -------------------------------------------------------------------------------


def _folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            total += path.stat().st_size
    return total


def _databases(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.stat().st_size >= len(SQLITE_MAGIC):
            with path.open("rb") as head:
                if head.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
                    found.append(path)
    return found


def _count_in(db_path: Path) -> tuple[int, int]:
    db = sqlite3.connect(db_path)
    try:
        frames, size = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM frame").fetchone()
    finally:
        db.close()
    return int(frames), int(size)


def verify_database(folder: Path, run: Run, settle: float = 60.0) -> None:
    """Compare what the databases in ``folder`` hold with what the client exchanged.

    ``db_ok`` is about the moment the wrapper exited; if it is short, the check is repeated
    for up to ``settle`` seconds (a recorder left behind) and ``db_settled_s`` says when (or
    None if never).
    """
    databases = _databases(folder)
    if not databases:
        return
    expected = (
        run["frames_sent"] + run["frames_received"],
        run["bytes_sent"] + run["bytes_received"],
    )
    run["db_expected_frames"], run["db_expected_bytes"] = expected

    def measure() -> tuple[int, int]:
        try:
            counts = [_count_in(path) for path in databases]
        except sqlite3.Error as error:
            run["db_error"] = str(error)
            return (-1, -1)
        return sum(c[0] for c in counts), sum(c[1] for c in counts)

    run["db_frames"], run["db_bytes"] = measure()
    run["db_ok"] = (run["db_frames"], run["db_bytes"]) == expected
    if run["db_ok"] or not run["ok"]:
        return
    start = time.monotonic()
    run["db_settled_s"] = None
    while time.monotonic() - start < settle:
        time.sleep(0.5)
        if measure() == expected:
            run["db_settled_s"] = round(time.monotonic() - start, 1)
            return


def run_one(
    wrapper: Wrapper, mode: str, count: int, rep: int, tmp_root: Path, errors: IO[bytes],
    timeout: float,
) -> Run:  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix=f"{wrapper.name}-{mode}-", dir=tmp_root))
    argv = wrapper.argv(str(folder))
    errors.write(f"# rep {rep} {mode} {wrapper.name}: {shlex.join(argv)}\n".encode())
    errors.flush()
    load_before = os.getloadavg()[0]
    try:
        try:
            if mode == "ping":
                result = client.run_ping(argv, count, stderr=errors, timeout=timeout)
            else:
                result = client.run_stream(argv, mode, count, stderr=errors, timeout=timeout)
        except Exception as error:  # one broken run must not end the whole benchmark
            result = client.RunResult(mode, count, error=f"{type(error).__name__}: {error}")
        run: Run = {"wrapper": wrapper.name, "mode": mode, "rep": rep, **result.as_dict()}
        run["argv"] = argv
        run["load1_before"] = load_before
        run["log_mb"] = _folder_bytes(folder) / 1e6
        verify_database(folder, run)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return run


# --- statistics ----------------------------------------------------------------------------


def _median(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


class Runs:
    """The runs so far, indexed by (mode, wrapper, repeat)."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self.by_key = {(r["mode"], r["wrapper"], r["rep"]): r for r in runs}
        self.all = list(runs)

    def ok(self, mode: str, wrapper: str) -> list[Run]:
        return [r for r in self.all if r["mode"] == mode and r["wrapper"] == wrapper and r["ok"]]

    def failed(self, mode: str, wrapper: str) -> int:
        return sum(
            1 for r in self.all if r["mode"] == mode and r["wrapper"] == wrapper and not r["ok"]
        )

    def median(self, mode: str, wrapper: str, value: Callable[[Run], float | None]) -> float | None:
        return _median(value(r) for r in self.ok(mode, wrapper))

    def paired(
        self, mode: str, wrapper: str, combine: Callable[[Run, Run], float | None]
    ) -> float | None:
        """Median over repeats of ``combine(run, direct run of the same repeat)``."""
        values = []
        for run in self.ok(mode, wrapper):
            direct = self.by_key.get((mode, DIRECT, run["rep"]))
            if direct is not None and direct["ok"]:
                values.append(combine(run, direct))
        return _median(values)


def _ratio(key: str) -> Callable[[Run, Run], float | None]:
    def combine(run: Run, direct: Run) -> float | None:
        if run.get(key) is None or not direct.get(key):
            return None
        return float(run[key]) / float(direct[key])

    return combine


def _difference(key: str) -> Callable[[Run, Run], float | None]:
    def combine(run: Run, direct: Run) -> float | None:
        if run.get(key) is None or direct.get(key) is None:
            return None
        return float(run[key]) - float(direct[key])

    return combine


def _committed_fps(run: Run) -> float | None:
    if run.get("seconds") is None or run.get("exit_ms") is None:
        return None
    return float(run["frames"]) / (float(run["seconds"]) + float(run["exit_ms"]) / 1e3)


def _committed_mbps(run: Run) -> float | None:
    if run.get("seconds") is None or run.get("exit_ms") is None:
        return None
    return float(run["bytes"]) / (float(run["seconds"]) + float(run["exit_ms"]) / 1e3) / 1e6


# --- the table -----------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, missing: str = "n/a") -> str:
    return missing if value is None else format(value, spec)


def _rate(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value / 1e3:,.0f}k" if value >= 1e4 else f"{value:,.0f}"


def _failures(data: Runs, modes: Iterable[str], wrapper: str) -> str:
    failed = sum(data.failed(m, wrapper) for m in modes)
    return f" **({failed} failed {'run' if failed == 1 else 'runs'})**" if failed else ""


def _verified(data: Runs, mode: str, wrapper: str) -> str:
    runs = [r for r in data.ok(mode, wrapper) if "db_ok" in r]
    if not runs:
        return ""
    good = sum(1 for r in runs if r["db_ok"])
    return f"; DB verified {good}/{len(runs)}"


def _throughput_cell(data: Runs, wrapper: str, pair: tuple[str, str]) -> str:
    first, second = pair
    ratios = [data.paired(m, wrapper, _ratio("mbps")) for m in pair]
    speeds = [data.median(m, wrapper, lambda r: r["mbps"]) for m in pair]
    if wrapper == DIRECT:
        ratios = [1.0 if s is not None else None for s in speeds]
    text = " / ".join(_fmt(r, ".2f") for r in ratios)
    text += " (" + " / ".join(_fmt(s, ",.0f") for s in speeds) + " MB/s)"
    return text + _failures(data, (first, second), wrapper)


def _large_cell(data: Runs, wrapper: str) -> str:
    text = _throughput_cell(data, wrapper, ("large1m", "large16m"))
    if wrapper == DIRECT:
        return text + "; no wrapper process"
    rss = [data.median(m, wrapper, lambda r: r["wrapper_hwm_mb"]) for m in ("large1m", "large16m")]
    return text + "; peak RSS " + " / ".join(_fmt(v, ".0f") for v in rss) + " MB"


def _committed_cell(
    data: Runs, wrapper: str, mode: str, value: Callable[[Run], float | None], as_bytes: bool
) -> str:
    median = data.median(mode, wrapper, value)
    text = f"{_fmt(median, ',.0f')} MB/s" if as_bytes else f"{_rate(median)} frames/s"

    def ratio(run: Run, direct: Run) -> float | None:
        ours, theirs = value(run), value(direct)
        return None if ours is None or not theirs else ours / theirs

    if wrapper != DIRECT:
        text += f" ({_fmt(data.paired(mode, wrapper, ratio), '.2f')} x direct)"
    verified = _verified(data, mode, wrapper)
    if not verified and wrapper != PROXY:
        verified = "; nothing committed"
    return text + verified + _failures(data, (mode,), wrapper)


def _ping_cell(data: Runs, wrapper: str) -> str:
    if wrapper == DIRECT:
        p50 = data.median("ping", DIRECT, lambda r: r["p50_us"])
        p99 = data.median("ping", DIRECT, lambda r: r["p99_us"])
        return f"{_fmt(p50, '.0f')} / {_fmt(p99, '.0f')} us (absolute)" + _failures(
            data, ("ping",), wrapper
        )
    add50 = data.paired("ping", wrapper, _difference("p50_us"))
    add99 = data.paired("ping", wrapper, _difference("p99_us"))
    return f"{_fmt(add50, '+.0f')} / {_fmt(add99, '+.0f')} us" + _failures(data, ("ping",), wrapper)


def _startup_cell(data: Runs, wrapper: str, modes: Sequence[str]) -> str:
    """Start-up pairs every run with the direct run of the same mode and repeat."""
    values: list[float | None] = []
    for mode in modes:
        for run in data.ok(mode, wrapper):
            direct = data.by_key.get((mode, DIRECT, run["rep"]))
            if direct is None or not direct["ok"]:
                continue
            values.append(
                run["startup_ms"] if wrapper == DIRECT
                else _difference("startup_ms")(run, direct)
            )  # fmt: skip
    median = _median(values)
    if wrapper == DIRECT:
        return f"{_fmt(median, '.1f')} ms (absolute)"
    return f"{_fmt(median, '+.1f')} ms"


def table(runs: Sequence[Run], modes: Sequence[str], names: Sequence[str]) -> str:
    data = Runs(runs)
    # (label, modes the row needs, cell for a wrapper)
    rows: list[tuple[str, tuple[str, ...], Callable[[str], str]]] = [
        (
            "delivery ratio to direct, 186 B / 4 KB frames (MB/s)",
            ("small", "medium"),
            lambda w: _throughput_cell(data, w, ("small", "medium")),
        ),
        (
            "delivery ratio to direct, 1 MiB / 16 MiB frames (MB/s); wrapper peak RSS",
            ("large1m", "large16m"),
            lambda w: _large_cell(data, w),
        ),
        (
            "186 B frames committed to SQLite per second: frames / (stream + exit drain)",
            ("small",),
            lambda w: _committed_cell(data, w, "small", _committed_fps, as_bytes=False),
        ),
        (
            "bytes committed per second, 1 MiB frames: bytes / (stream + exit drain)",
            ("large1m",),
            lambda w: _committed_cell(data, w, "large1m", _committed_mbps, as_bytes=True),
        ),
        (
            "added ping round trip p50 / p99 vs direct",
            ("ping",),
            lambda w: _ping_cell(data, w),
        ),
        (
            "added start-up to the initialize response vs direct",
            tuple(modes),
            lambda w: _startup_cell(data, w, modes),
        ),
    ]
    lines = [
        "| measure | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, needs, cell in rows:
        if any(mode in modes for mode in needs):
            cells = [cell(name) for name in names]
        else:
            cells = ["not run"] * len(names)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def details(runs: Sequence[Run], modes: Sequence[str], names: Sequence[str]) -> str:
    """Per mode and wrapper medians: everything the main table leaves out."""
    data = Runs(runs)
    lines = [
        "| mode | wrapper | ok runs | MB/s | ratio | MB/s incl. exit drain | p50 / p99 us "
        "| exit ms | wrapper CPU s | wrapper RSS MB | agent RSS MB | start-up ms | log MB "
        "| DB complete at exit |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for mode in modes:
        for name in names:
            ok = data.ok(mode, name)
            total = len(ok) + data.failed(mode, name)
            if not total:
                continue

            def med(key: str, rows: list[Run] = ok) -> float | None:
                return _median(r.get(key) for r in rows)

            if mode == "ping":
                speed = ratio = drained = ""
                ping = f"{_fmt(med('p50_us'), '.0f')} / {_fmt(med('p99_us'), '.0f')}"
            else:
                speed = _fmt(med("mbps"), ",.1f")
                ratio = _fmt(data.paired(mode, name, _ratio("mbps")), ".2f")
                drained = _fmt(_median(_committed_mbps(r) for r in ok), ",.1f")
                ping = ""
            db = [r for r in ok if "db_ok" in r]
            complete = f"{sum(1 for r in db if r['db_ok'])}/{len(db)}" if db else ""
            lines.append(
                f"| {mode} | {name} | {len(ok)}/{total} | {speed} | {ratio} | {drained} | {ping} "
                f"| {_fmt(med('exit_ms'), '.0f')} | {_fmt(med('cpu_wrapper_s'), '.2f')} "
                f"| {_fmt(med('wrapper_hwm_mb'), '.0f')} | {_fmt(med('agent_hwm_mb'), '.0f')} "
                f"| {_fmt(med('startup_ms'), '.1f')} | {_fmt(med('log_mb'), '.0f')} "
                f"| {complete} |"
            )
    return "\n".join(lines) + "\n"


def noise(runs: Sequence[Run], modes: Sequence[str], load: tuple[float, float]) -> str:
    """How steady the machine was: load average and the spread of the direct runs."""
    spreads = []
    for mode in modes:
        key = "p50_us" if mode == "ping" else "mbps"
        values = [r[key] for r in runs if r["mode"] == mode and r["wrapper"] == DIRECT and r["ok"]]
        if len(values) > 1:
            spread = (max(values) - min(values)) / statistics.median(values)
            spreads.append(f"{mode} {spread:.0%}")
    text = (
        f"Load average (1 min) {load[0]:.2f} at start, {load[1]:.2f} at end, {os.cpu_count()} CPUs."
    )
    if spreads:
        text += " Spread of direct over repeats ((max - min) / median): " + ", ".join(spreads) + "."
    return text + "\n"


# --- main ----------------------------------------------------------------------------------


def _parse_modes(values: Sequence[str]) -> list[str]:
    modes = [m for value in values for m in value.replace(",", " ").split()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise SystemExit(f"unknown modes {unknown}; known: {', '.join(MODES)}")
    return modes


def _parse_counts(values: Sequence[str]) -> dict[str, int]:
    counts = dict(client.DEFAULT_COUNTS)
    for value in values:
        mode, _, number = value.partition("=")
        if mode not in counts or not number.isdigit():
            raise SystemExit(f"--count takes MODE=N with MODE one of {', '.join(MODES)}")
        counts[mode] = int(number)
    return counts


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.run", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modes", nargs="+", default=list(MODES), help=" ".join(MODES))
    parser.add_argument(
        "--out", type=Path,
        default=Path(tempfile.gettempdir()) / "acp-perf" / time.strftime("run-%Y%m%d-%H%M%S"),
    )  # fmt: skip
    parser.add_argument("--proxy", default=default_proxy_prefix(), help="proxy command prefix")
    parser.add_argument("--count", action="append", default=[], metavar="MODE=N")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument(
        "--also", action="append", default=[], metavar="NAME=PREFIX",
        help="another proxy command to measure in the same run (a column of its own)",
    )  # fmt: skip
    options = parser.parse_args(args)
    modes = _parse_modes(options.modes)
    counts = _parse_counts(options.count)
    chosen = wrappers(options.proxy, options.also)
    names = [w.name for w in chosen]
    out: Path = options.out
    out.mkdir(parents=True, exist_ok=True)
    tmp_root = Path(tempfile.mkdtemp(prefix="acp-perf-runs-"))
    meta: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "repeat": options.repeat,
        "modes": modes, "counts": {m: counts[m] for m in modes},
        "wrappers": {w.name: shlex.join(w.prefix) for w in chosen},
        "agent": shlex.join(client.agent_argv()), "python": sys.version,
        "platform": platform.platform(), "cpus": os.cpu_count(),
    }  # fmt: skip
    load_start = os.getloadavg()[0]
    runs: list[Run] = []
    print(f"acp-perf: writing to {out}", file=sys.stderr)
    try:
        with (out / "stderr.log").open("wb") as errors:
            for rep in range(options.repeat):
                for index, mode in enumerate(modes):
                    shift = (rep + index) % len(chosen)
                    for wrapper in chosen[shift:] + chosen[:shift]:
                        run = run_one(
                            wrapper, mode, counts[mode], rep, tmp_root, errors, options.timeout
                        )
                        runs.append(run)
                        _progress(run)
                        _dump(out / "runs.json", meta, runs)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    load = (load_start, os.getloadavg()[0])
    meta["load1"] = load
    _dump(out / "runs.json", meta, runs)
    heading = (
        f"acp-proxy benchmark, {options.repeat} interleaved repeats; medians; ratios are medians "
        f"of per-repeat ratios to direct. Counts: "
        + ", ".join(f"{m} {counts[m]:,}" for m in modes)
        + ".\n\n"
    )
    text = heading + table(runs, modes, names) + "\n" + noise(runs, modes, load)
    (out / "table.md").write_text(text)
    (out / "details.md").write_text(details(runs, modes, names))
    print(text)
    print(f"(every run: {out / 'runs.json'}; per mode: {out / 'details.md'})", file=sys.stderr)
    return 0 if all(r["ok"] and r.get("db_ok", True) for r in runs) else 1


def _progress(run: Run) -> None:
    if not run["ok"]:
        figure = f"FAILED: {run['error']}"
    elif run["mode"] == "ping":
        figure = f"p50 {run['p50_us']:.0f} us p99 {run['p99_us']:.0f} us"
    else:
        figure = f"{run['mbps']:8.1f} MB/s, exit {run['exit_ms']:.0f} ms"
    if "db_ok" in run:
        figure += ", DB ok" if run["db_ok"] else ", DB SHORT"
    print(f"rep {run['rep']} {run['mode']:8s} {run['wrapper']:9s} {figure}", file=sys.stderr)


def _dump(path: Path, meta: dict[str, Any], runs: list[Run]) -> None:
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
    temporary.replace(path)


if __name__ == "__main__":
    sys.exit(main())
