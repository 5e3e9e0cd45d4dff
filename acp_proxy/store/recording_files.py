"""Recording files read as recordings: JSONL exports (cassettes), captures, bug-report bundles.

Rules:
- A bundle (``.acpbundle``, a zip: share/bundle.py writes it) is accepted only when it is one:
  a ``manifest.json`` that says ``"format": "acp-proxy-bundle"``, exactly one ``frames.jsonl``,
  no member twice, every member stored or deflated (no other compression method) and not
  encrypted. Anything else is refused with the reason, before a byte of frames is read.
- What is read is bounded, whatever the file claims: a member may expand at most
  ``MAX_RATIO`` times its compressed size (past ``RATIO_FROM`` bytes) and the manifest at most
  ``MAX_MANIFEST`` bytes, so a small file cannot make the reader allocate gigabytes (a zip
  bomb). Frames are streamed line by line, never read whole, and no line may pass
  ``MAX_LINE_BYTES``: a longer one is refused as soon as that much of it is read, so a member
  of one endless line costs no more memory than the bound. A damaged member (bad deflate
  data, a wrong CRC, a truncated file) is refused when it is met.
- Every refusal is ``UnreadableRecording`` naming the file: the command line says it in one
  line (exit 2).
- A JSONL export, or a capture of another tool (importer.py reads which it is), is read as
  it is on disk, line by line under the same line bound (nothing in it can expand).
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from acp_proxy.errors import UnreadableRecording

FRAMES_MEMBER = "frames.jsonl"
MANIFEST = "manifest.json"
BUNDLE_FORMAT = "acp-proxy-bundle"
# Bundles, JSONL exports, and captures of other tools (store/captures.py): JSONL of raw frames,
# sacp-conductor traces (.jsons, .ndjson), Zed ACP logs and acp-devtools exports (.json).
SUFFIXES = (".acpbundle", ".zip", ".jsonl", ".json", ".jsons", ".ndjson")
MAX_RATIO = 200
RATIO_FROM = 8 << 20
MAX_MANIFEST = 1 << 20
# The longest line (newline included) a recording file may hold: the JSONL line of a frame of
# tens of MiB fits; a line past it is refused before more of it is read.
MAX_LINE_BYTES = 64 << 20
_PIECE = 1 << 20
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_ENCRYPTED = 0x1


def is_recording_file(ref: str | None) -> bool:
    """Whether ``ref`` names a bundle or a JSONL export on disk (rather than a recording)."""
    if not ref or not os.path.isfile(ref):
        return False
    return ref.endswith(SUFFIXES) or zipfile.is_zipfile(ref)


def looks_like_a_file(ref: str) -> bool:
    """Whether ``ref`` is written as a path (a folder separator or a recording file suffix)."""
    return os.sep in ref or ref.endswith(SUFFIXES) or ref.startswith(("~", "."))


def _refuse(path: Path, why: str) -> UnreadableRecording:
    return UnreadableRecording(f"{path}: {why}")


def _members(path: Path, bundle: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    members: dict[str, zipfile.ZipInfo] = {}
    for info in bundle.infolist():
        if info.filename in members:
            raise _refuse(path, f"not a usable bundle: it holds {info.filename} twice")
        if info.flag_bits & _ENCRYPTED:
            raise _refuse(path, f"not a usable bundle: {info.filename} is encrypted")
        if info.compress_type not in _METHODS:
            raise _refuse(
                path,
                f"not a usable bundle: {info.filename} uses compression method "
                f"{info.compress_type} (bundles are stored or deflated)",
            )
        limit = max(RATIO_FROM, info.compress_size * MAX_RATIO)
        if info.file_size > limit:
            raise _refuse(
                path,
                f"not a usable bundle: {info.filename} would expand to {info.file_size} bytes "
                f"from {info.compress_size} (more than {MAX_RATIO} times: refused as a zip "
                "bomb; unzip it yourself if you trust it)",
            )
        members[info.filename] = info
    return members


def _manifest(path: Path, bundle: zipfile.ZipFile, info: zipfile.ZipInfo | None) -> Any:
    if info is None:
        raise _refuse(path, f"not an acp-proxy bundle (no {MANIFEST})")
    if info.file_size > MAX_MANIFEST:
        raise _refuse(path, f"not an acp-proxy bundle ({MANIFEST} is {info.file_size} bytes)")
    try:
        manifest = orjson.loads(_read(path, bundle, info))
    except orjson.JSONDecodeError as error:
        raise _refuse(path, f"not an acp-proxy bundle ({MANIFEST} is not JSON: {error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise _refuse(path, f'not an acp-proxy bundle ({MANIFEST} has no "format": '
                      f'"{BUNDLE_FORMAT}")')  # fmt: skip
    return manifest


def _read(path: Path, bundle: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        return bundle.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise _refuse(path, f"damaged bundle ({info.filename}: {error})") from None


def open_bundle(path: Path) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo], Any]:
    """A checked bundle (see the rules): the open zip, its members by name, its manifest."""
    try:
        bundle = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as error:
        raise _refuse(path, f"not a readable bundle ({error})") from None
    try:
        members = _members(path, bundle)
        manifest = _manifest(path, bundle, members.get(MANIFEST))
        _require_frames(path, members)
    except BaseException:
        bundle.close()
        raise
    return bundle, members, manifest


def _require_frames(path: Path, members: dict[str, zipfile.ZipInfo]) -> None:
    if FRAMES_MEMBER not in members:
        raise _refuse(path, f"not an acp-proxy bundle (no {FRAMES_MEMBER})")


def read_member(path: Path, bundle: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One member of a bundle checked by ``open_bundle``, whole: only one of at most
    ``MAX_LINE_BYTES`` (a JSON document, read at once); longer ones are refused."""
    if info.file_size > MAX_LINE_BYTES:
        raise _refuse(path, f"{info.filename} is {info.file_size} bytes, more than the "
                      f"{_mib(MAX_LINE_BYTES)} a document in a bundle may hold")  # fmt: skip
    return _read(path, bundle, info)


def member_lines(path: Path, bundle: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The lines of one member of a bundle checked by ``open_bundle``, streamed and bounded."""
    try:
        member = bundle.open(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise _refuse(path, f"damaged bundle ({info.filename}: {error})") from None
    with member:
        yield from _stream(path, member, info.filename)


def _mib(size: int) -> str:
    return f"{size >> 20} MiB"


def _stream(path: Path, handle: IO[bytes], name: str) -> Iterator[bytes]:
    """The lines of ``handle``, read in pieces; a line longer than ``MAX_LINE_BYTES`` is
    refused once that much of it is held (see the rules)."""
    number = 0
    pending: list[bytes] = []  # the start of a line that goes on in the next piece
    held = 0
    try:
        while piece := handle.read(_PIECE):
            start = 0
            while (end := piece.find(b"\n", start)) >= 0:
                number += 1
                if held + end + 1 - start > MAX_LINE_BYTES:
                    raise _too_long(path, name, number)
                if pending:
                    yield b"".join([*pending, piece[start : end + 1]])
                    pending, held = [], 0
                else:
                    yield piece[start : end + 1]
                start = end + 1
            if start < len(piece):
                pending.append(piece[start:] if start else piece)
                held += len(piece) - start
                if held > MAX_LINE_BYTES:
                    raise _too_long(path, name, number + 1)
        if pending:
            yield b"".join(pending)
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise _refuse(path, f"damaged bundle ({name}: {error})") from None
    except OSError as error:
        raise _refuse(path, f"cannot read it: {error.strerror or error}") from None


def _too_long(path: Path, name: str, number: int) -> UnreadableRecording:
    return _refuse(path, f"{name}: line {number} is longer than {_mib(MAX_LINE_BYTES)}, the "
                   "most a recording file's line may hold")  # fmt: skip


def file_lines(path: Path) -> Iterator[bytes]:
    """The lines of a file on disk, streamed under the line bound (``UnreadableRecording``)."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise _refuse(path, f"cannot read it: {error.strerror or error}") from None
    with handle:
        yield from _stream(path, handle, path.name)


def frames_lines(path: Path) -> Iterator[bytes]:
    """The lines of the JSONL export a recording file holds (a bundle's ``frames.jsonl``)."""
    if zipfile.is_zipfile(path):
        bundle, members, _ = open_bundle(path)
        with bundle:
            yield from member_lines(path, bundle, members[FRAMES_MEMBER])
        return
    if path.suffix in (".acpbundle", ".zip"):
        raise _refuse(path, "not a readable bundle (not a zip file, or truncated)")
    yield from file_lines(path)
