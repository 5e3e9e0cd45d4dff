"""Files and folders the store creates: readable by their owner only (recordings hold secrets).

Rules:
- A file is created with mode 0600 and every folder created on the way to it with 0700
  (``chmod`` after ``mkdir``: its mode passes through the umask).
- A symbolic link whose target is missing is refused, never followed into a file created with
  the default mode; an existing file is left as it is.
- Several processes may create the same folders at once: one made meanwhile is not an error.
"""

from __future__ import annotations

import os
from pathlib import Path

from acp_proxy.errors import RecordingError


def create_private_folder(path: Path) -> None:
    """Create ``path`` and every missing folder above it, each readable by the owner only."""
    missing: list[Path] = []
    folder = path
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile
            continue
        os.chmod(folder, 0o700)  # mkdir's mode passes through the umask


def create_private_file(path: Path) -> None:
    """Create ``path`` (and missing folders) readable by the owner only, if it is missing.

    A dangling symbolic link is refused: following it would create its target with whatever
    mode SQLite picks, somewhere the user did not name.
    """
    if path.is_symlink() and not path.exists():
        raise RecordingError(f"{path} is a symbolic link to a missing file; not creating it")
    create_private_folder(path.parent)
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)
