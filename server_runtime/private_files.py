"""Files only their owner can read: every Weir server process keeps its state private.

Brokers' logs hold every tenant's records; the control plane's directory holds the SQLite
database, the Celery queue and the secrets (the internal token, Django's key). Each entry
point (``python -m broker_nodes``, ``manage.py``, the WSGI application, the Celery app,
``make up``) calls :func:`make_new_files_private` first, so that every directory it creates
is 0700 and every file 0600 whatever umask it was started with, and :func:`restrict_directory`
on the data directory it is given, so that one left readable by an older version or a
permissive umask is closed at start.

Only the directory itself and its direct files are changed, not the whole tree: a closed
directory already keeps everyone else out of everything under it, and a broker's tree can
hold thousands of segment files that need no walk at every start.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Permission bits new files and directories never get: everything for group and others.
PRIVATE_UMASK = 0o077
# What restrict_directory leaves on the directory and on each file directly in it.
PRIVATE_DIRECTORY_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_new_files_private() -> int:
    """Set the process umask to 0o077 (children inherit it); return the previous one."""
    return os.umask(PRIVATE_UMASK)


def restrict_directory(path: Path | str) -> None:
    """Make ``path`` 0700 and the regular files directly in it 0600, if it exists.

    Entries owned by another user (which chmod would refuse) and symbolic links are left as
    they are; a file that disappears meanwhile is skipped.
    """
    directory = Path(path)
    try:
        if directory.is_symlink() or not directory.is_dir():
            return
        _chmod_owned(directory, PRIVATE_DIRECTORY_MODE)
        for entry in os.scandir(directory):
            if entry.is_file(follow_symlinks=False):
                _chmod_owned(Path(entry.path), PRIVATE_FILE_MODE)
    except FileNotFoundError:
        return


def _chmod_owned(path: Path, mode: int) -> None:
    try:
        status = path.lstat()
    except FileNotFoundError:
        return
    if status.st_uid == os.geteuid() and stat.S_IMODE(status.st_mode) != mode:
        os.chmod(path, mode)
