"""Errors of backup, restore and broker resync. None is retriable: each needs a person to act."""

from __future__ import annotations


class BackupFormatError(ValueError):
    """A backup file that cannot be restored: ``location`` says where (``sections.tenants[3].plan``),
    ``reason`` what is wrong with it."""

    retriable = False

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"{location}: {reason}" if location else reason)
        self.location = location
        self.reason = reason


class RestoreRefusedError(Exception):
    """The target database is not one a restore may write into (not empty, or older migrations)."""

    retriable = False


class ResyncRefusedError(Exception):
    """Pushing the restored state would do harm the operator did not agree to (``unknown`` names
    the topics brokers host that the restored catalog lacks, which the push would delete)."""

    retriable = False

    def __init__(self, message: str, unknown: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.unknown = unknown
