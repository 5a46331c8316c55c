"""Reading PEM files (certificates, keys, CA bundles) with one clear error, for every process.

Brokers read their certificate, key and CA, the controller its certificate and key; both
refuse a missing or non-PEM file at startup with :class:`PemFileError` naming the file and the
reason. (The SDK reads its CA itself, in ``weir.config``, and reports it as a configuration error.)
"""

from __future__ import annotations

from pathlib import Path


class PemFileError(Exception):
    """A certificate, key or CA file cannot be read or is not PEM (the process does not start)."""

    retriable = False

    def __init__(self, path: Path, reason: str, *, what: str = "TLS") -> None:
        super().__init__(f"{what}: cannot read {path}: {reason}")
        self.path = path
        self.reason = reason


def read_pem(path: Path | str, *, what: str = "TLS") -> bytes:
    """The bytes of the PEM file at ``path``; PemFileError (prefixed with ``what``) otherwise."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PemFileError(path, error.strerror or str(error), what=what) from None
    if b"-----BEGIN" not in data:
        raise PemFileError(path, "not a PEM file", what=what)
    return data
