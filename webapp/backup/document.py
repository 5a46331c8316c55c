"""Backup files: JSON, gzip-compressed when the name ends in ``.gz``, checked before any restore.

:func:`check_document` turns a parsed document into a :class:`CheckedBackup` of typed Python
values (datetimes, UUIDs) or raises :class:`BackupFormatError` naming the first problem by
its place in the document (``sections.api_keys[2].owner_membership``): the format and its
version, unknown or missing members, value types, choices, lengths the database would refuse,
duplicate keys, references to rows the document does not hold, and references to another
tenant's row (see ``_check_references``). Nothing here touches the
database, so a bad file is refused before anything is written.

Files are written aside and renamed into place, readable by their owner only: they hold
password and API key hashes.
"""

from __future__ import annotations

import gzip
import json
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from django.apps import apps

from webapp.backup.errors import BackupFormatError
from webapp.backup.schema import (
    BOOLEAN,
    DATETIME,
    FORMAT_NAME,
    FORMAT_VERSION,
    INTEGER,
    INTEGER_LIST,
    PERMISSION_LIST,
    REFERENCE,
    REFERENCE_LIST,
    SECTIONS,
    SECTIONS_BY_NAME,
    STRING_MAP,
    TEXT,
    UUID,
    Field,
    Section,
)

GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip stream
FILE_MODE = 0o600  # backups hold password and key hashes: owner only
_TOP_LEVEL = ("format", "format_version", "created_at", "database_vendor", "migrations", "sections")


@dataclass(frozen=True)
class CheckedBackup:
    """A document that passed :func:`check_document`: ``sections`` maps each section's name to
    its rows, each a dict of typed values keyed by field name (datetimes parsed; UUIDs and
    references as canonical text, references still natural keys)."""

    format_version: int
    created_at: datetime
    database_vendor: str
    migrations: tuple[str, ...]
    sections: Mapping[str, list[dict[str, Any]]]

    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.sections.items()}


# ---------------------------------------------------------------------------------- files


def encode_document(document: Mapping[str, Any], *, compress: bool) -> bytes:
    """The bytes of a backup file: indented JSON (sorted keys, so two backups diff well), gzipped if asked."""
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    data = text.encode("utf-8")
    # mtime=0: the same state gives the same bytes.
    return gzip.compress(data, mtime=0) if compress else data


def write_backup_file(document: Mapping[str, Any], path: Path) -> int:
    """Write ``document`` to ``path`` (gzip when it ends in ``.gz``) atomically, mode 0600; the bytes written."""
    data = encode_document(document, compress=path.name.endswith(".gz"))
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return len(data)


def write_backup_stream(document: Mapping[str, Any], stream: BinaryIO) -> int:
    """Write ``document`` as plain JSON to a binary stream (standard output); the bytes written."""
    data = encode_document(document, compress=False)
    stream.write(data)
    stream.flush()
    return len(data)


def parse_backup_bytes(data: bytes, source: str) -> Any:
    """The JSON value of a backup file's bytes (gzip recognised by its magic bytes, whatever the name)."""
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise BackupFormatError(source, f"not a readable gzip file ({error}); was it truncated?") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BackupFormatError(source, f"not UTF-8 text (byte {error.start}); is this a backup file?") from None
    if not text.strip():
        raise BackupFormatError(source, "the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise BackupFormatError(source, f"not valid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None


def read_backup_file(path: Path) -> Any:
    """Read and parse a backup file; BackupFormatError when it is missing or unreadable."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BackupFormatError(str(path), f"cannot read it: {error.strerror}") from None
    return parse_backup_bytes(data, str(path))


# ---------------------------------------------------------------------------------- checks


def check_document(document: Any) -> CheckedBackup:
    """Check everything that can be checked without a database; see the module docstring."""
    if not isinstance(document, dict):
        raise BackupFormatError("", f"a backup is a JSON object, not {_json_type(document)}")
    if document.get("format") != FORMAT_NAME:
        raise BackupFormatError("format", f"expected {FORMAT_NAME!r}, found {document.get('format')!r}: this is not a Weir control-plane backup")
    version = document.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BackupFormatError("format_version", f"expected a whole number of at least 1, found {version!r}")
    if version > FORMAT_VERSION:
        raise BackupFormatError(
            "format_version", f"the backup has format version {version}, written by a newer Weir; this one reads versions up to {FORMAT_VERSION}"
        )
    _refuse_unknown_members(document, _TOP_LEVEL, "")
    created_at = _datetime(document.get("created_at"), "created_at")
    vendor = document.get("database_vendor")
    if not isinstance(vendor, str):
        raise BackupFormatError("database_vendor", f"expected text, found {_json_type(vendor)}")
    migrations = document.get("migrations")
    if not isinstance(migrations, list) or not all(isinstance(name, str) and "." in name for name in migrations):
        raise BackupFormatError("migrations", "expected a list of applied migrations named 'app_label.migration_name'")
    raw_sections = document.get("sections")
    if not isinstance(raw_sections, dict):
        raise BackupFormatError("sections", f"expected an object of sections, found {_json_type(raw_sections)}")
    _refuse_unknown_members(raw_sections, tuple(section.name for section in SECTIONS), "sections")
    sections: dict[str, list[dict[str, Any]]] = {}
    for section in SECTIONS:
        sections[section.name] = _check_section(section, raw_sections.get(section.name))
    _check_references(sections)
    return CheckedBackup(version, created_at, vendor, tuple(migrations), sections)


def _check_section(section: Section, rows: Any) -> list[dict[str, Any]]:
    location = f"sections.{section.name}"
    if rows is None:
        raise BackupFormatError(location, "missing: every section is written, empty or not")
    if not isinstance(rows, list):
        raise BackupFormatError(location, f"expected a list of rows, found {_json_type(rows)}")
    if section.singleton and len(rows) > 1:
        raise BackupFormatError(location, f"holds at most one row, found {len(rows)}")
    model = apps.get_model(section.model)
    checked: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(rows):
        row_location = f"{location}[{index}]"
        if not isinstance(row, dict):
            raise BackupFormatError(row_location, f"expected an object, found {_json_type(row)}")
        _refuse_unknown_members(row, section.field_names, row_location)
        values = {}
        for member in section.fields:
            if member.name not in row:
                raise BackupFormatError(f"{row_location}.{member.name}", "missing")
            values[member.name] = _check_value(member, row[member.name], f"{row_location}.{member.name}", model)
        if section.key:
            key = tuple(values[name] for name in section.key)
            if key in seen:
                shown = ", ".join(f"{name}={row[name]!r}" for name in section.key)
                raise BackupFormatError(row_location, f"a second row with {shown} (first at index {seen[key]})")
            seen[key] = index
        checked.append(values)
    return checked


def _check_value(member: Field, value: Any, location: str, model: Any) -> Any:
    """The typed value of one field of a row, by the checker of the field's kind (see ``_CHECKERS``)."""
    if value is None:
        if member.nullable:
            return None
        raise BackupFormatError(location, "must not be null")
    checker = _CHECKERS.get(member.kind)
    if checker is None:
        raise AssertionError(f"unknown field kind {member.kind!r}")
    return checker(member, value, location, model)


def _check_text(member: Field, value: Any, location: str, model: Any) -> str:
    """Text within the field's choices and within the length its database column holds."""
    value = _check_choice(member, value, location)
    max_length = model._meta.get_field(member.name).max_length
    if max_length is not None and len(value) > max_length:
        raise BackupFormatError(location, f"{len(value)} characters, more than the {max_length} the database holds")
    return value


def _check_reference(member: Field, value: Any, location: str, model: Any) -> Any:
    """The natural key of a row of the target section, checked as the target's key fields are
    (a UUID in its canonical form): one value for a one-field key, else a list of the key's
    values in key order, held as a tuple."""
    target = SECTIONS_BY_NAME[member.target]
    target_model = apps.get_model(target.model)
    key_fields = [target.field_named(name) for name in target.key]
    if len(key_fields) == 1:
        return _check_value(key_fields[0], value, location, target_model)
    if not isinstance(value, list) or len(value) != len(key_fields):
        raise BackupFormatError(location, f"expected a list of {len(key_fields)} values ({', '.join(target.key)}) naming a row of sections.{target.name}")
    return tuple(_check_value(key_field, item, f"{location}[{index}]", target_model) for index, (key_field, item) in enumerate(zip(key_fields, value)))


def _check_choice(member: Field, value: Any, location: str) -> str:
    if not isinstance(value, str):
        raise BackupFormatError(location, f"expected text, found {_json_type(value)}")
    if member.choices and value not in member.choices:
        raise BackupFormatError(location, f"{value!r} is not one of {', '.join(member.choices)}")
    return value


def _check_integer(member: Field, value: Any, location: str, model: Any) -> Any:
    if not _is_integer(value):
        raise BackupFormatError(location, f"expected a whole number, found {_json_type(value)}")
    return value


def _check_boolean(member: Field, value: Any, location: str, model: Any) -> bool:
    if not isinstance(value, bool):
        raise BackupFormatError(location, f"expected true or false, found {_json_type(value)}")
    return value


def _check_datetime(member: Field, value: Any, location: str, model: Any) -> datetime:
    return _datetime(value, location)


def _check_uuid(member: Field, value: Any, location: str, model: Any) -> str:
    return _canonical_uuid(value, location)


def _check_string_map(member: Field, value: Any, location: str, model: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise BackupFormatError(location, "expected an object whose values are text")
    return dict(value)


def _check_integer_list(member: Field, value: Any, location: str, model: Any) -> list[int]:
    if not isinstance(value, list) or not all(_is_integer(item) for item in value):
        raise BackupFormatError(location, "expected a list of whole numbers")
    return list(value)


def _check_text_set(member: Field, value: Any, location: str, model: Any) -> list[str]:
    """A list of text stored as a set: sorted, without repeats, so that two backups of one state are equal."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BackupFormatError(location, "expected a list of text")
    return sorted(set(value))


def _check_permission_list(member: Field, value: Any, location: str, model: Any) -> list[str]:
    names = _check_text_set(member, value, location, model)
    for item in value:
        app_label, dot, codename = item.partition(".")
        if not dot or not app_label or not codename:
            raise BackupFormatError(location, f"{item!r} is not a permission named 'app_label.codename'")
    return names


def _is_integer(value: Any) -> bool:
    # JSON's true and false arrive as bool, which Python counts as int: they are not numbers here.
    return isinstance(value, int) and not isinstance(value, bool)


# The checker of each field kind: (field, non-null value, its place in the document, the section's model) -> typed value.
_CHECKERS: dict[str, Callable[[Field, Any, str, Any], Any]] = {
    TEXT: _check_text,
    REFERENCE: _check_reference,
    INTEGER: _check_integer,
    BOOLEAN: _check_boolean,
    DATETIME: _check_datetime,
    UUID: _check_uuid,
    STRING_MAP: _check_string_map,
    INTEGER_LIST: _check_integer_list,
    REFERENCE_LIST: _check_text_set,
    PERMISSION_LIST: _check_permission_list,
}


def _check_references(sections: Mapping[str, list[dict[str, Any]]]) -> None:
    """Every reference names a row of its target section (by the target's natural key), and a row
    and the row it names agree on the references they both hold: a reference to a composite key
    that includes, say, a tenant names a row of the referencing row's own tenant."""
    keys_of = {section.name: {section.natural_key(row) for row in sections[section.name]} for section in SECTIONS if section.key}
    for section in SECTIONS:
        for member in section.fields:
            if member.kind not in (REFERENCE, REFERENCE_LIST):
                continue
            known = keys_of[member.target]
            shared = _shared_key_fields(section, member)
            for index, row in enumerate(sections[section.name]):
                value = row[member.name]
                named = value if member.kind == REFERENCE_LIST else ([] if value is None else [value])
                location = f"sections.{section.name}[{index}].{member.name}"
                for item in named:
                    if item not in known:
                        raise BackupFormatError(location, f"names {_shown(item)}, which is not in sections.{member.target}")
                    for position, name in shared:
                        if item[position] != row[name]:
                            raise BackupFormatError(location, f"names {_shown(item)}, whose {name} is not this row's {name} {row[name]!r}")


def _shared_key_fields(section: Section, member: Field) -> list[tuple[int, str]]:
    """(position in the target's composite key, field name) of the target's key references that
    ``section`` also holds, naming the same section: the values a row and the row it names share."""
    target = SECTIONS_BY_NAME[member.target]
    if member.kind != REFERENCE or len(target.key) < 2:
        return []
    shared = []
    for position, name in enumerate(target.key):
        key_field = target.field_named(name)
        if key_field.kind == REFERENCE and name in section.field_names and section.field_named(name) == key_field:
            shared.append((position, name))
    return shared


def _shown(natural_key: Any) -> str:
    """A natural key as the document spells it: a composite key as a JSON list."""
    return json.dumps(list(natural_key)) if isinstance(natural_key, tuple) else repr(natural_key)


def _canonical_uuid(value: Any, location: str) -> str:
    """A UUID in its canonical text form, so that two spellings of one id compare equal."""
    if not isinstance(value, str):
        raise BackupFormatError(location, f"expected a UUID as text, found {_json_type(value)}")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise BackupFormatError(location, f"{value!r} is not a UUID") from None


def _datetime(value: Any, location: str) -> datetime:
    if not isinstance(value, str):
        raise BackupFormatError(location, f"expected an ISO 8601 date and time, found {_json_type(value)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BackupFormatError(location, f"{value!r} is not an ISO 8601 date and time") from None
    if parsed.tzinfo is None:
        raise BackupFormatError(location, f"{value!r} has no UTC offset")
    return parsed


def _refuse_unknown_members(value: Mapping[str, Any], known: tuple[str, ...], location: str) -> None:
    unknown = sorted(set(value) - set(known))
    if unknown:
        where = f"{location}." if location else ""
        raise BackupFormatError(f"{where}{unknown[0]}", f"unknown member (expected only {', '.join(known)})")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
