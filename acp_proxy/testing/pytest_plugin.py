"""pytest plugin: test ACP clients and agents against recorded conversations (cassettes).

Rules:
- Registered through the ``pytest11`` entry point, so installing acp-proxy enables it. A test
  names its cassette with ``@pytest.mark.acp_cassette("name")`` (default: the test's name); the
  cassette is ``cassettes/NAME.jsonl`` next to the test file (cassette.py).
- Record modes, as in vcr.py, per test (``record_mode=`` on the marker) or for the run
  (``--acp-record-mode``; the marker wins): ``once`` (default: record when the cassette is
  missing, replay otherwise), ``new_episodes`` (replay what the cassette holds, record a
  conversation it does not hold as one more episode; a missing cassette is recorded as in
  ``once``), ``none`` (replay only; a missing cassette fails the test), ``all`` (always record
  anew, replacing the cassette).
- A cassette may hold several episodes (recorded connections); replay follows the one the
  client's conversation matches, and ``replay --to-agent`` drives every one.
- ``acp_agent_command`` (testing a client): an argv to use as the client's agent command. It
  replays the cassette (``acp-proxy replay``, recorded into a scratch database); after the test,
  a replay that diverged (the client sent something the cassette does not hold, or stopped
  early) fails it with replay's summary; a test that failed already is not failed twice: the
  summary becomes a section (``acp-proxy replay``) of its failure report. When recording, it
  runs ``acp-proxy record`` around the real agent (``agent=`` on the marker, or the
  ``acp_real_agent`` fixture), and the cassette is written after the test. In ``new_episodes``
  the replay is given the real agent too (``replay --go-live``): a conversation no episode holds
  goes on with it, caught up with what the client was told, and is appended to the cassette
  after the test; a real agent that does not reproduce what the client was told fails the test.
- ``acp_agent_driver`` (testing an agent): a callable that runs ``replay --to-agent`` on the
  cassette against an agent command and fails the test naming the first differing frame, with
  expected and actual. When recording, it needs ``client=``: a client argv that takes the agent
  command as its last arguments; the client talks to the agent through ``acp-proxy record``.
  In ``new_episodes`` every episode is driven, then the client (if given) is run too: its
  conversation is appended when its client side is in no episode, and must match the episode
  whose client side it repeats otherwise.
- ``acp_agent_url`` (testing a remote client): the URL of the cassette served as a remote agent
  (``replay --listen 127.0.0.1:0``, Streamable HTTP and WebSocket on the same address: a
  WebSocket client uses it with ``ws://``). After the test the listener is stopped; a
  connection that diverged (or no connection at all) fails the test with replay's summaries,
  once, as ``acp_agent_command`` does. When the cassette is being recorded, the URL is that of
  ``record --listen 127.0.0.1:0 --upstream REAL_URL`` in front of the real remote agent
  (``agent_url=`` on the marker, or the ``acp_real_agent_url`` fixture), and the cassette is
  written from its first connection after the test.
- Cassettes are redacted by default (``redact=False`` on the marker keeps them as recorded).
- Child commands run as ``sys.executable -m acp_proxy``; every wait has a timeout.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_proxy.testing.cassette import CassetteError, append, exported, later, outcome, save

MODES = ("once", "new_episodes", "none", "all")
RERECORD = 're-record the cassette with record_mode="all" if the agent changed on purpose'
PROXY = (sys.executable, "-m", "acp_proxy")
DEFAULT_TIMEOUT = 30.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

Driver = Callable[..., None]
_CALL_FAILED = pytest.StashKey[bool]()
_CALL_REPORT = pytest.StashKey[pytest.TestReport]()
_NOTE = pytest.StashKey[str]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether the test body failed; a failed test carries the replay's account.

    A test that already failed is reported once: what ``acp_agent_command`` found after it
    (the client diverged) becomes a section of that failure instead of a second error.
    """
    report = yield
    if call.when == "call":
        item.stash[_CALL_FAILED] = bool(report.failed)
        item.stash[_CALL_REPORT] = report
    elif call.when == "teardown" and _NOTE in item.stash and _CALL_REPORT in item.stash:
        item.stash[_CALL_REPORT].sections.append(("acp-proxy replay", item.stash[_NOTE]))
    return report


def _fail_once(request: pytest.FixtureRequest, message: str) -> None:
    """Fail the test with ``message``, or (it failed already) add it to that failure."""
    if request.node.stash.get(_CALL_FAILED, False):
        request.node.stash[_NOTE] = message
        return
    pytest.fail(message, pytrace=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-proxy")
    group.addoption(
        "--acp-record-mode", choices=MODES, default=None,
        help="Record mode for ACP cassettes (once, new_episodes, none, all); a test's "
        "marker wins.",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "acp_cassette(name=None, record_mode=None, agent=None, agent_url=None, redact=True): run "
        "against the ACP cassette cassettes/NAME.jsonl next to the test file (acp-proxy).",
    )


@dataclass(frozen=True, slots=True)
class Cassette:
    """The cassette of one test, and whether this run records it or replays it."""

    path: Path
    mode: str
    recording: bool
    redact: bool
    db: Path  # scratch database of this test's run


@pytest.fixture
def acp_cassette(request: pytest.FixtureRequest, tmp_path: Path) -> Cassette:
    marker = request.node.get_closest_marker("acp_cassette")
    args = marker.args if marker else ()
    kwargs = marker.kwargs if marker else {}
    name = str(args[0]) if args else _UNSAFE.sub("_", request.node.name)
    path = Path(request.node.path).parent / "cassettes" / f"{name}.jsonl"
    mode = kwargs.get("record_mode") or request.config.getoption("acp_record_mode") or "once"
    if mode not in MODES:
        pytest.fail(f"acp_cassette: record_mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "none" and not path.exists():
        pytest.fail(f"cassette {path} is missing and record mode is none")
    recording = mode == "all" or not path.exists()
    db = tmp_path / "acp-cassette.sqlite"
    return Cassette(path, mode, recording, bool(kwargs.get("redact", True)), db)


@pytest.fixture
def acp_real_agent(request: pytest.FixtureRequest) -> list[str] | None:
    """The real agent to record with (``agent=`` on the marker); override it to choose one."""
    marker = request.node.get_closest_marker("acp_cassette")
    agent = marker.kwargs.get("agent") if marker else None
    return [str(part) for part in agent] if agent else None


@pytest.fixture
def acp_agent_command(
    request: pytest.FixtureRequest, acp_cassette: Cassette, acp_real_agent: list[str] | None
) -> Iterator[list[str]]:
    cassette = acp_cassette
    if cassette.recording:
        if not acp_real_agent:
            pytest.fail(
                f"cassette {cassette.path} must be recorded (mode {cassette.mode}) but no real "
                "agent was given (agent= on acp_cassette, or the acp_real_agent fixture)"
            )
        yield [*PROXY, "record", "--db", str(cassette.db), "--", *acp_real_agent]
        _save(cassette)
        return
    argv = [*PROXY, "replay", str(cassette.path), "--record", "--db", str(cassette.db)]
    if cassette.mode == "new_episodes" and acp_real_agent:
        argv += ["--go-live", "--", *acp_real_agent]
    yield argv
    try:
        ended = outcome(cassette.db)
        new = later(cassette.db)
    except CassetteError as error:
        _fail_once(request, f"replay of {cassette.path}: {error}")
        return
    if ended.exit_code != 0:
        hint = ""
        if "does not reproduce" in ended.stderr:
            hint = f"\nThe real agent does not reproduce the recorded prefix: {RERECORD}."
        elif cassette.mode == "new_episodes" and not acp_real_agent:
            hint = "\nnew_episodes records a new conversation only when a real agent is given."
        _fail_once(request, f"the client diverged from {cassette.path}:\n{ended.stderr}{hint}")
        return
    for connection in new:
        _append(cassette, str(connection))


@pytest.fixture
def acp_real_agent_url(request: pytest.FixtureRequest) -> str | None:
    """The real remote agent to record with (``agent_url=`` on the marker); override it."""
    marker = request.node.get_closest_marker("acp_cassette")
    url = marker.kwargs.get("agent_url") if marker else None
    return str(url) if url else None


@pytest.fixture
def acp_agent_url(
    request: pytest.FixtureRequest, acp_cassette: Cassette, acp_real_agent_url: str | None
) -> Iterator[str]:
    cassette = acp_cassette
    if cassette.recording:
        if not acp_real_agent_url:
            pytest.fail(
                f"cassette {cassette.path} must be recorded (mode {cassette.mode}) but no real "
                "agent URL was given (agent_url= on acp_cassette, or the acp_real_agent_url "
                "fixture)"
            )
        argv = [*PROXY, "record", "--db", str(cassette.db), "--listen", "127.0.0.1:0"]
        argv += ["--upstream", acp_real_agent_url]
        with _listening(argv) as (url, _):
            yield url
        _save_first(cassette)
        return
    argv = [*PROXY, "replay", "--db", str(cassette.db), "--listen", "127.0.0.1:0"]
    argv.append(str(cassette.path))
    with _listening(argv) as (url, ended):
        yield url
    status, said = ended()
    if status != 0:
        _fail_once(request, f"the client diverged from {cassette.path}:\n{said}")


@contextmanager
def _listening(
    argv: list[str],
) -> Iterator[tuple[str, Callable[[], tuple[int | None, str]]]]:
    """A listening acp-proxy command: its URL, then (once stopped) its status and words."""
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    said: list[str] = []
    ended: list[int | None] = []

    def outcome() -> tuple[int | None, str]:
        return (ended[0] if ended else None), "".join(said)

    try:
        assert process.stderr is not None
        first = _first_line(process, DEFAULT_TIMEOUT)
        if "listening on " not in first:
            process.kill()
            words = process.communicate()[1].decode("utf-8", "replace")
            pytest.fail(f"{' '.join(argv)} did not start:\n{first}{words}", pytrace=False)
        yield first.split("listening on ", 1)[1].split()[0], outcome
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            _, rest = process.communicate(timeout=DEFAULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            _, rest = process.communicate()
        said.append(rest.decode("utf-8", "replace"))
        ended.append(process.returncode)


def _first_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The first line the process says on stderr, waited for at most ``timeout`` seconds."""
    import selectors

    assert process.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return process.stderr.readline().decode("utf-8", "replace")


def _save_first(cassette: Cassette) -> None:
    try:
        _replace_with(cassette, exported(cassette.db, "1", cassette.path, redact=cassette.redact))
    except CassetteError as error:
        pytest.fail(f"cassette {cassette.path}: {error}", pytrace=False)


def _replace_with(cassette: Cassette, data: bytes) -> None:
    cassette.path.parent.mkdir(parents=True, exist_ok=True)
    scratch = cassette.path.with_name(f".{cassette.path.name}.tmp")
    scratch.write_bytes(data)
    scratch.replace(cassette.path)


@pytest.fixture
def acp_agent_driver(acp_cassette: Cassette) -> Driver:
    cassette = acp_cassette

    def drive(
        agent: Sequence[str], *, client: Sequence[str] | None = None, client_input: bytes = b"",
        ignore: Sequence[str] = (), timeout: float = DEFAULT_TIMEOUT,
    ) -> None:  # fmt: skip
        """Check ``agent`` against the cassette (or record it through ``client``)."""
        if cassette.recording:
            _record_with_client(cassette, agent, client, client_input, timeout)
            return
        argv = [*PROXY, "replay", "--to-agent", str(cassette.path), "--db", str(cassette.db)]
        argv += [f"--ignore={path}" for path in ignore]
        argv += ["--timeout", str(timeout), "--", *agent]
        done = _run(argv, b"", timeout)
        summary = done.stderr.decode("utf-8", "replace")
        if done.returncode == 1:
            start = summary.find("acp-proxy: replay --to-agent")
            pytest.fail(f"{cassette.path}:\n{summary[max(start, 0) :]}", pytrace=False)
        if done.returncode != 0:
            pytest.fail(f"replay --to-agent failed ({done.returncode}):\n{summary}", pytrace=False)
        if cassette.mode == "new_episodes" and client:
            _new_episode(cassette, agent, client, client_input, ignore, timeout)

    return drive


def _new_episode(
    cassette: Cassette, agent: Sequence[str], client: Sequence[str], client_input: bytes,
    ignore: Sequence[str], timeout: float,
) -> None:  # fmt: skip
    """Run ``client`` against ``agent``; append its conversation if no episode holds it."""
    from acp_proxy.check.report import render_diff_text
    from acp_proxy.testing.cassette_episodes import repeats, split

    _run_client(cassette, agent, client, client_input, timeout)
    try:
        new = exported(cassette.db, "last", cassette.path, redact=cassette.redact)
    except CassetteError as error:
        pytest.fail(f"cassette {cassette.path}: {error}", pytrace=False)
    repeated = repeats(new, split(cassette.path.read_bytes()), ignore)
    if repeated is None:
        append(cassette.path, new)
        return
    if not repeated.diff.equal:
        episode = f"episode {repeated.episode + 1}"
        shown = render_diff_text(repeated.diff, (episode, "this run"))
        pytest.fail(
            f"{cassette.path}: the client repeated {episode}, but the agent answered "
            f"differently:\n{shown}",
            pytrace=False,
        )


def _record_with_client(
    cassette: Cassette, agent: Sequence[str], client: Sequence[str] | None, client_input: bytes,
    timeout: float,
) -> None:  # fmt: skip
    if not client:
        pytest.fail(
            f"cassette {cassette.path} must be recorded (mode {cassette.mode}): give "
            "acp_agent_driver a client= command to record the conversation with"
        )
    _run_client(cassette, agent, client, client_input, timeout)
    _save(cassette)


def _run_client(
    cassette: Cassette, agent: Sequence[str], client: Sequence[str], client_input: bytes,
    timeout: float,
) -> None:  # fmt: skip
    recorder = [*PROXY, "record", "--db", str(cassette.db), "--", *agent]
    done = _run([*client, *recorder], client_input, timeout)
    if done.returncode != 0:
        pytest.fail(
            f"recording {cassette.path}: the client exited with {done.returncode}:\n"
            f"{done.stderr.decode('utf-8', 'replace')}"
        )


def _run(argv: Sequence[str], stdin: bytes, timeout: float) -> subprocess.CompletedProcess[bytes]:
    try:
        # The outer timeout leaves the command its own (--timeout, the agent's grace) first.
        return subprocess.run(
            list(argv), input=stdin, capture_output=True, timeout=timeout * 2, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(argv)} did not finish within {timeout * 2:g}s")


def _append(cassette: Cassette, ref: str) -> None:
    try:
        append(cassette.path, exported(cassette.db, ref, cassette.path, redact=cassette.redact))
    except CassetteError as error:
        pytest.fail(f"cassette {cassette.path}: {error}", pytrace=False)


def _save(cassette: Cassette) -> None:
    try:
        save(cassette.db, cassette.path, redact=cassette.redact)
    except CassetteError as error:
        pytest.fail(f"cassette {cassette.path}: {error}", pytrace=False)
