"""Limits of a tenant's registry and Confluent's rules for subject names."""

from __future__ import annotations

from webapp.schemas.errors import InvalidSchemaError, InvalidSubject, OperationNotPermitted

MAX_SCHEMA_BYTES = 1024 * 1024  # a schema's text, UTF-8 encoded
MAX_VERSIONS_PER_SUBJECT = 1000  # live and soft-deleted versions together
MAX_REFERENCES = 100  # direct references of one schema
MAX_SUBJECT_LENGTH = 255  # characters; the column's size
# Confluent reserves these (they name the global context and the default context's settings).
RESERVED_SUBJECTS = frozenset({"__GLOBAL", "__EMPTY"})


def check_subject_name(subject: str) -> None:
    """Raise InvalidSubject (42208) unless ``subject`` is 1..255 characters without control characters."""
    if not subject:
        raise InvalidSubject("The subject name must not be empty.")
    if len(subject) > MAX_SUBJECT_LENGTH:
        raise InvalidSubject(f"The subject name is {len(subject)} characters long; the limit is {MAX_SUBJECT_LENGTH}.")
    if any(ord(character) < 32 or ord(character) == 127 for character in subject):
        raise InvalidSubject("The subject name must not contain control characters.")
    if subject in RESERVED_SUBJECTS:
        raise InvalidSubject(f"The subject name '{subject}' is reserved.")


def check_schema_size(text: str) -> None:
    size = len(text.encode())
    if size > MAX_SCHEMA_BYTES:
        raise InvalidSchemaError(f"The schema is {size} bytes; the limit is {MAX_SCHEMA_BYTES} bytes (1 MiB).")


def check_version_room(subject: str, versions: int) -> None:
    if versions >= MAX_VERSIONS_PER_SUBJECT:
        raise OperationNotPermitted(f"Subject '{subject}' has {versions} versions, the limit; delete versions permanently to register more.")
