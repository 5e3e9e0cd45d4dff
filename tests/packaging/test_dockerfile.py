"""The Dockerfile, checked without a container engine (none runs where these tests run).

What is checked, and how:
- hadolint finds nothing at all (every level counts, inline ignore pragmas are disabled).
- The final stage's ENTRYPOINT + CMD, run with the console script of the environment running
  these tests and with the Dockerfile's ENV applied (volume paths moved under a tmp folder),
  print the help and exit 0; and `record` under that ENV writes its database in the volume.
- The image is slim, runs as a non-root user, keeps recordings in a declared volume owned by
  that user, and installs nothing but the package (`pip install --no-cache-dir .`).
- COPY sources exist and survive .dockerignore; .dockerignore keeps .git, .venv, .peers,
  caches and local recordings out of the build context.
- The build context as .dockerignore filters it, laid out as the Dockerfile's COPY and
  WORKDIR lay it out, builds (pip wheel, with build isolation as `pip install .` uses) a wheel
  that holds the whole package, py.typed included, and the `acp-proxy` entry point; installed
  on its own, that wheel's `acp-proxy --help` works.
"""

from __future__ import annotations

import configparser
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from tests.support.processes import run_to_end

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
BASE_IMAGE = "python:3.11-slim"
ENTRY_POINT = (
    "acp-proxy = "
    + tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["acp-proxy"]
)
BIN = Path(sys.executable).parent
PIP = (sys.executable, "-m", "pip")


# --- reading the Dockerfile ------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int


def instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comments and blank lines dropped."""
    result: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue  # Docker drops comment lines, also inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        keyword, _, arguments = " ".join(pending).partition(" ")
        result.append(Instruction(keyword.upper(), arguments.strip(), start))
        pending = []
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return result


def final_stage(all_instructions: list[Instruction]) -> list[Instruction]:
    starts = [i for i, instruction in enumerate(all_instructions) if instruction.keyword == "FROM"]
    assert starts, "no FROM"
    return all_instructions[starts[-1] :]


def exec_form(instruction: Instruction) -> list[str]:
    try:
        value = json.loads(instruction.arguments)
    except json.JSONDecodeError:
        value = None
    assert isinstance(value, list), f"line {instruction.line}: use the exec form (a JSON list)"
    assert all(isinstance(item, str) for item in value)
    return value


def env_pairs(instruction: Instruction) -> dict[str, str]:
    words = shlex.split(instruction.arguments)
    if "=" not in words[0]:  # legacy `ENV KEY value with spaces`
        return {words[0]: " ".join(words[1:])}
    pairs = dict(word.split("=", 1) for word in words)
    for key, value in pairs.items():
        assert "$" not in value, f"ENV {key}: substitution is not handled by this test"
    return pairs


def only(stage: list[Instruction], keyword: str) -> Instruction:
    found = [instruction for instruction in stage if instruction.keyword == keyword]
    assert len(found) == 1, f"expected exactly one {keyword} in the final stage, found {found}"
    return found[0]


def copy_arguments(instruction: Instruction) -> tuple[list[str], str]:
    text = instruction.arguments
    flags = []
    while text.startswith("--"):
        flag, _, text = text.partition(" ")
        flags.append(flag)
        text = text.strip()
    assert not any(flag.startswith("--from") for flag in flags), "multi-stage COPY not handled"
    words = json.loads(text) if text.startswith("[") else shlex.split(text)
    return words[:-1], words[-1]


@pytest.fixture(scope="module")
def stage() -> list[Instruction]:
    return final_stage(instructions(DOCKERFILE.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def image_env(stage: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in stage:
        if instruction.keyword == "ENV":
            env.update(env_pairs(instruction))
    return env


@pytest.fixture(scope="module")
def volumes(stage: list[Instruction]) -> list[str]:
    return [path for i in stage if i.keyword == "VOLUME" for path in exec_form(i)]


# --- reading .dockerignore (Docker's rules: last matching pattern wins; a pattern that matches
# a folder matches everything in it; `**` spans folders; `!` re-includes) ----------------------


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out.append("[" + pattern[i + 1 : end].replace("!", "^", 1) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def ignore_rules(text: str) -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = str(PurePosixPath(line.removeprefix("!").strip().lstrip("/")))
        rules.append((include, _pattern_regex(pattern)))
    return rules


def is_ignored(rules: list[tuple[bool, re.Pattern[str]]], path: str) -> bool:
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for include, regex in rules:
        if any(regex.fullmatch(candidate) for candidate in candidates):
            ignored = not include
    return ignored


@pytest.fixture(scope="module")
def rules() -> list[tuple[bool, re.Pattern[str]]]:
    return ignore_rules(DOCKERIGNORE.read_text(encoding="utf-8"))


def build_context(rules: list[tuple[bool, re.Pattern[str]]], into: Path) -> None:
    """Copy the files of the repository that .dockerignore lets into the build context.

    An ignored folder is not entered (Docker would still look inside for files re-included by a
    later `!` pattern; this .dockerignore re-includes only top-level names).
    """
    for folder, dirs, files in os.walk(REPO):
        relative = Path(folder).relative_to(REPO)
        dirs[:] = [d for d in dirs if not is_ignored(rules, (relative / d).as_posix())]
        for name in files:
            path = relative / name
            if not is_ignored(rules, path.as_posix()):
                (into / relative).mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / path, into / path)


# --- the checks -------------------------------------------------------------------------------


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(BIN)) or shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is missing: it is a test dependency (pip install -e '.[test]')")
    return found


def run_hadolint(dockerfile: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "hadolint.yaml"  # ours, so no user or project config can relax it
    config.write_text("failure-threshold: style\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HADOLINT_")}
    return run_to_end(
        [hadolint(), "--config", str(config), "--no-color", "--disable-ignore-pragma", dockerfile],
        env=env,
        timeout=30,
    )


def test_hadolint_finds_nothing(tmp_path: Path) -> None:
    result = run_hadolint(DOCKERFILE, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_hadolint_does_lint(tmp_path: Path) -> None:
    # Guards the test above: hadolint exits 0 on a config it cannot read, for instance.
    bad = tmp_path / "Dockerfile"
    bad.write_text(f"FROM {BASE_IMAGE}\nRUN pip install click\n", encoding="utf-8")
    result = run_hadolint(bad, tmp_path)
    assert result.returncode != 0
    assert "DL3042" in result.stdout


def test_image_is_slim_non_root_and_installs_only_the_package(
    stage: list[Instruction], volumes: list[str]
) -> None:
    all_from = [i for i in instructions(DOCKERFILE.read_text()) if i.keyword == "FROM"]
    assert [i.arguments for i in all_from] == [BASE_IMAGE]

    user = stage[-1 - [i.keyword for i in reversed(stage)].index("USER")].arguments
    uid, _, gid = user.partition(":")
    assert uid not in ("root", "0"), "the image must not run as root"
    assert gid not in ("root", "0"), "the image must not run with the root group"
    last_user = max(n for n, i in enumerate(stage) if i.keyword == "USER")
    assert all(i.keyword != "RUN" for i in stage[last_user:]), "RUN after USER: as non-root?"

    runs = " && ".join(i.arguments for i in stage if i.keyword == "RUN")
    assert re.search(r"\bpip install --no-cache-dir( --\S+)* \.(\s|$)", runs)
    assert not re.search(r"\b(apt-get|apt|apk|dnf|yum)\b", runs), "no system packages"
    assert "/data" in volumes
    assert re.search(rf"useradd\b[^&]*--uid {uid}\b", runs), "USER must be the created user"
    assert re.search(r"\bchown \S+ /data\b", runs), "/data must belong to the runtime user"


def test_recordings_live_in_a_volume(image_env: dict[str, str], volumes: list[str]) -> None:
    db = PurePosixPath(image_env["ACP_PROXY_DB"])
    assert any(db.is_relative_to(volume) for volume in volumes)


def host_env(image_env: dict[str, str], volumes: list[str], root: Path) -> dict[str, str]:
    """The environment the image's entrypoint sees, with each volume moved under `root`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_PROXY_")}
    for key, value in image_env.items():
        env[key] = value
        for volume in volumes:
            if PurePosixPath(value).is_relative_to(volume):
                moved = root / volume.lstrip("/") / PurePosixPath(value).relative_to(volume)
                moved.parent.mkdir(parents=True, exist_ok=True)  # the image has its volumes
                env[key] = str(moved)
    return env


def entrypoint(stage: list[Instruction]) -> list[str]:
    argv = exec_form(only(stage, "ENTRYPOINT"))
    assert argv[0] == "acp-proxy"
    script = shutil.which("acp-proxy", path=str(BIN))
    assert script is not None, f"no acp-proxy console script in {BIN}"
    return [script, *argv[1:]]


def test_entrypoint_and_cmd_print_help(
    stage: list[Instruction], image_env: dict[str, str], volumes: list[str], tmp_path: Path
) -> None:
    argv = entrypoint(stage) + exec_form(only(stage, "CMD"))
    result = run_to_end(
        argv, env=host_env(image_env, volumes, tmp_path), stdin=subprocess.DEVNULL, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: acp-proxy ")
    assert "record" in result.stdout


def test_entrypoint_records_into_the_volume(
    stage: list[Instruction], image_env: dict[str, str], volumes: list[str], tmp_path: Path
) -> None:
    env = host_env(image_env, volumes, tmp_path)
    argv = [*entrypoint(stage), "record", "--", sys.executable, "-c", "pass"]
    result = run_to_end(argv, text=False, env=env, stdin=subprocess.DEVNULL, timeout=30)
    assert result.returncode == 0, result.stderr
    db = Path(env["ACP_PROXY_DB"])
    assert db.is_relative_to(tmp_path)
    assert db.read_bytes().startswith(b"SQLite format 3\0")


def test_copy_sources_exist_and_are_in_the_context(
    stage: list[Instruction], rules: list[tuple[bool, re.Pattern[str]]]
) -> None:
    copies = [i for i in stage if i.keyword in ("COPY", "ADD")]
    assert copies
    for instruction in copies:
        assert instruction.keyword == "COPY", "ADD fetches and unpacks: use COPY"
        sources, _ = copy_arguments(instruction)
        for source in sources:
            matches = glob.glob(source, root_dir=REPO)
            assert matches, f"line {instruction.line}: COPY source {source!r} does not exist"
            for match in matches:
                if match != ".":
                    assert not is_ignored(rules, match), f"{match} is in .dockerignore"


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        ".peers/node_modules/x.js",
        ".mypy_cache/3.11/cache.db",
        ".pytest_cache/v/cache/lastfailed",
        ".ruff_cache/CACHEDIR.TAG",
        ".hypothesis/examples/x",
        "acp_proxy/__pycache__/cli.cpython-311.pyc",
        "acp_proxy/cli.pyc",
        "acp_proxy.egg-info/PKG-INFO",
        "build/lib/acp_proxy/cli.py",
        "dist/acp_proxy-0.1.0-py3-none-any.whl",
        "recordings/recordings.sqlite",
        "recordings.sqlite",
        "acp_proxy/recordings.sqlite-wal",
        "tests/test_cli_docs.py",
    ],
)
def test_dockerignore_keeps_out(rules: list[tuple[bool, re.Pattern[str]]], path: str) -> None:
    assert is_ignored(rules, path)


def test_dockerignore_lets_the_package_in(rules: list[tuple[bool, re.Pattern[str]]]) -> None:
    needed = ["pyproject.toml", "acp_proxy/py.typed"]
    needed += [p.relative_to(REPO).as_posix() for p in (REPO / "acp_proxy").rglob("*.py")]
    needed += [p.name for p in REPO.glob("README*")]
    assert [path for path in needed if is_ignored(rules, path)] == []


def lay_out_image(stage: list[Instruction], context: Path, root: Path) -> Path:
    """Apply the stage's WORKDIR and COPY to an empty `root`; the WORKDIR of `pip install .`."""
    workdir = PurePosixPath("/")
    for instruction in stage:
        if instruction.keyword == "WORKDIR":
            workdir = workdir / instruction.arguments
        elif instruction.keyword == "COPY":
            sources, destination = copy_arguments(instruction)
            target = root / str(workdir / destination).lstrip("/")
            into_folder = destination.endswith(("/", ".")) or len(sources) > 1
            for source in sources:
                for match in sorted(context.glob(source)) if source != "." else [context]:
                    if match.is_dir():  # Docker copies a folder's contents, not the folder
                        shutil.copytree(match, target, dirs_exist_ok=True)
                    else:
                        place = target / match.name if into_folder else target
                        place.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(match, place)
        elif instruction.keyword == "RUN" and re.search(
            r"\bpip install\b.* \.", instruction.arguments
        ):
            return root / str(workdir).lstrip("/")
    pytest.fail("no `pip install .` in the final stage")


def test_build_context_makes_a_complete_working_wheel(
    stage: list[Instruction], rules: list[tuple[bool, re.Pattern[str]]], tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    build_context(rules, context)
    source = lay_out_image(stage, context, tmp_path / "image")
    wheels = tmp_path / "wheels"
    build = run_to_end(
        [*PIP, "wheel", "--no-deps", "--no-cache-dir", "-q", "--wheel-dir", wheels, source],
        timeout=120,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    [wheel] = wheels.glob("acp_proxy-*.whl")

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        parser = configparser.ConfigParser()
        parser.read_string(archive.read(entry_points).decode())
    package = {p.relative_to(REPO).as_posix() for p in (REPO / "acp_proxy").rglob("*.py")}
    package.add("acp_proxy/py.typed")
    assert package - names == set()
    assert [n for n in names if "__pycache__" in n or n.endswith(".pyc")] == []
    others = {n.split("/")[0] for n in names} - {"acp_proxy"}
    assert len(others) == 1, f"the wheel holds more than the package: {others}"
    assert others.pop().endswith(".dist-info")
    assert f"acp-proxy = {parser['console_scripts']['acp-proxy']}" == ENTRY_POINT

    # Installed alone (dependencies come from this environment), the wheel's script works.
    target = tmp_path / "site"
    install = run_to_end(
        [*PIP, "install", "--no-deps", "--no-cache-dir", "-q", "--target", target, wheel],
        timeout=60,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("ACP_PROXY_DB", None)
    where = run_to_end(
        [sys.executable, "-c", "import acp_proxy; print(acp_proxy.__file__)"],
        env=env,
        cwd=tmp_path,
        check=True,
        timeout=30,
    )
    assert Path(where.stdout.strip()).is_relative_to(target), "the wheel is not what runs"
    result = run_to_end([target / "bin" / "acp-proxy", "--help"], env=env, cwd=tmp_path, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: acp-proxy ")
