"""Durable file replacement: write a temporary file, fsync it, rename it, fsync the directory.

A reader after a crash sees either the previous content or the new content, never a torn mix.
Without ``durable`` the two fsyncs are skipped: the replacement is still atomic for readers and
survives the process's crash (kill -9: the kernel keeps the written pages), but not a power
loss, so it is only for files the caller can rebuild or fsyncs later.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker_nodes.storage.file_names import TEMPORARY_SUFFIX


def fsync_directory(directory: Path) -> None:
    """fsync a directory so that renames and new files inside it survive a crash."""
    descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_atomically(path: Path, data: bytes, *, mode: int = 0o600, durable: bool = True, sync_directory: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file.

    The file has ``mode`` from its first byte: the owner's only by default, like every file of
    a data directory (server_runtime.private_files). ``durable=False``: no fsync (see the
    module docstring). ``sync_directory=False``: the file is fsynced but not its directory, so
    the rename may be lost in a power loss (the old file stays) until the caller fsyncs the
    directory, once for several files replaced in it.
    """
    temporary = path.with_name(path.name + TEMPORARY_SUFFIX)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        # os.open's mode is filtered by the umask and ignored for a leftover file: set it exactly.
        os.fchmod(descriptor, mode)
        view = memoryview(data)
        while view:
            written = os.write(descriptor, view)
            view = view[written:]
        if durable:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)
    if durable and sync_directory:
        fsync_directory(path.parent)
