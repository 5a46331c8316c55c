"""A bad backup file is refused before anything is written, with where and what is wrong."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from webapp.backup.document import check_document, encode_document, parse_backup_bytes, read_backup_file, write_backup_file
from webapp.backup.errors import BackupFormatError
from webapp.backup.schema import SECTIONS

WHEN = "2025-01-31T12:00:00+00:00"


def minimal_document() -> dict[str, Any]:
    """A valid backup of one tenant with its owner."""
    sections: dict[str, list[dict[str, Any]]] = {section.name: [] for section in SECTIONS}
    sections["users"] = [
        {
            "username": "ada",
            "password": "pbkdf2_sha256$1000000$salt$hash",
            "email": "ada@example.com",
            "first_name": "",
            "last_name": "",
            "is_active": True,
            "is_staff": False,
            "is_superuser": False,
            "date_joined": WHEN,
            "last_login": None,
            "groups": [],
            "user_permissions": [],
        }
    ]
    sections["tenants"] = [{"public_id": "tn-abc", "name": "Acme", "slug": "acme", "plan": "standard", "created_at": WHEN}]
    sections["memberships"] = [{"public_id": "u-abc", "tenant": "tn-abc", "user": "ada", "role": "owner", "created_at": WHEN}]
    sections["topics"] = [
        {
            "topic_id": "5F0E6C3A-97C2-4B0B-9E0F-3F1B3C1D2E4F",
            "tenant": "tn-abc",
            "name": "orders",
            "partition_count": 1,
            "replication_factor": 1,
            "configs": {"retention.ms": "1000"},
            "created_at": WHEN,
            "updated_at": WHEN,
        }
    ]
    sections["partitions"] = [{"topic": "5f0e6c3a-97c2-4b0b-9e0f-3f1b3c1d2e4f", "index": 0, "replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0}]
    return {
        "format": "weir-control-plane-backup",
        "format_version": 1,
        "created_at": WHEN,
        "database_vendor": "postgresql",
        "migrations": ["accounts.0001_initial"],
        "sections": sections,
    }


def test_a_valid_document_is_checked_into_typed_values() -> None:
    checked = check_document(minimal_document())
    assert checked.counts()["tenants"] == 1
    assert checked.sections["users"][0]["date_joined"].isoformat() == WHEN
    # Two spellings of one topic id are the same topic.
    assert checked.sections["topics"][0]["topic_id"] == checked.sections["partitions"][0]["topic"]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change of the document at a dotted path (list indexes as numbers)."""

    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = document
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is KeyError:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value

    return change


@pytest.mark.parametrize(
    ("change", "location", "reason"),
    [
        (_set("format", "something-else"), "format", "this is not a Weir control-plane backup"),
        (_set("format_version", 2), "format_version", "format version 2, written by a newer Weir; this one reads versions up to 1"),
        (_set("format_version", "1"), "format_version", "expected a whole number of at least 1"),
        (_set("comment", "hello"), "comment", "unknown member"),
        (_set("created_at", "yesterday"), "created_at", "not an ISO 8601 date and time"),
        (_set("migrations", ["0001_initial"]), "migrations", "app_label.migration_name"),
        (_set("sections.quotas", KeyError), "sections.quotas", "missing"),
        (_set("sections.widgets", []), "sections.widgets", "unknown member"),
        (_set("sections.tenants", {}), "sections.tenants", "expected a list of rows, found an object"),
        (_set("sections.tenants.0.colour", "red"), "sections.tenants[0].colour", "unknown member"),
        (_set("sections.tenants.0.slug", KeyError), "sections.tenants[0].slug", "missing"),
        (_set("sections.tenants.0.plan", "gold"), "sections.tenants[0].plan", "'gold' is not one of free, standard, enterprise"),
        (_set("sections.tenants.0.slug", "x" * 51), "sections.tenants[0].slug", "51 characters, more than the 50 the database holds"),
        (_set("sections.tenants.0.created_at", "2025-01-31T12:00:00"), "sections.tenants[0].created_at", "has no UTC offset"),
        (_set("sections.tenants.0.name", None), "sections.tenants[0].name", "must not be null"),
        (_set("sections.users.0.is_staff", "no"), "sections.users[0].is_staff", "expected true or false"),
        (_set("sections.users.0.groups", ["admins"]), "sections.users[0].groups", "names 'admins', which is not in sections.permission_groups"),
        (_set("sections.users.0.user_permissions", ["change_everything"]), "sections.users[0].user_permissions", "not a permission named 'app_label.codename'"),
        (_set("sections.memberships.0.tenant", "tn-zzz"), "sections.memberships[0].tenant", "names 'tn-zzz', which is not in sections.tenants"),
        (_set("sections.partitions.0.replicas", [1, "2"]), "sections.partitions[0].replicas", "expected a list of whole numbers"),
        (_set("sections.partitions.0.leader", True), "sections.partitions[0].leader", "expected a whole number, found a boolean"),
        (_set("sections.partitions.0.topic", "not-a-uuid"), "sections.partitions[0].topic", "'not-a-uuid' is not a UUID"),
        (_set("sections.topics.0.configs", {"retention.ms": 1000}), "sections.topics[0].configs", "expected an object whose values are text"),
        (_set("sections.topics.0.topic_id", 17), "sections.topics[0].topic_id", "expected a UUID as text, found the number 17"),
        (_set("sections.topics.0.partition_count", "1"), "sections.topics[0].partition_count", "expected a whole number, found the text '1'"),
        (_set("sections.tenants.0.name", ["Acme"]), "sections.tenants[0].name", "expected text, found a list"),
        (_set("sections.memberships.0.tenant", 7), "sections.memberships[0].tenant", "expected text, found the number 7"),
        (_set("sections.users.0.groups", "admins"), "sections.users[0].groups", "expected a list of text"),
        (_set("sections.users.0.date_joined", 0), "sections.users[0].date_joined", "expected an ISO 8601 date and time, found the number 0"),
        (_set("sections.controller_epoch", [{"epoch": 1, "holder": "", "activated_at": None}] * 2), "sections.controller_epoch", "at most one row, found 2"),
    ],
)
def test_a_bad_document_is_refused_naming_where_and_what(change: Callable[[dict[str, Any]], None], location: str, reason: str) -> None:
    document = minimal_document()
    change(document)
    with pytest.raises(BackupFormatError) as refused:
        check_document(document)
    assert refused.value.location == location
    assert reason in refused.value.reason


def test_a_second_row_with_the_same_key_is_refused() -> None:
    document = minimal_document()
    document["sections"]["tenants"].append(copy.deepcopy(document["sections"]["tenants"][0]) | {"slug": "acme-2"})
    with pytest.raises(BackupFormatError, match=r"sections.tenants\[1\]: a second row with public_id='tn-abc' \(first at index 0\)"):
        check_document(document)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "the file is empty"),
        (b'{"format": ', "not valid JSON at line 1 column 12"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (gzip.compress(b'{"format": "weir-control-plane-backup"}', mtime=0)[:-6], "not a readable gzip file"),  # mtime=0: one test id in every xdist worker
    ],
)
def test_an_unreadable_file_is_refused_saying_why(data: bytes, reason: str) -> None:
    with pytest.raises(BackupFormatError, match=reason):
        parse_backup_bytes(data, "backup.json")


def test_a_json_value_other_than_an_object_is_not_a_backup() -> None:
    with pytest.raises(BackupFormatError, match="a backup is a JSON object, not a list"):
        check_document([1, 2])


def test_files_are_written_whole_and_read_back_plain_or_compressed(tmp_path: Path) -> None:
    document = minimal_document()
    for name in ("backup.json", "backup.json.gz"):
        write_backup_file(document, tmp_path / name)
        assert read_backup_file(tmp_path / name) == document
    assert (tmp_path / "backup.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert json.loads((tmp_path / "backup.json").read_text()) == document
    assert sorted(path.name for path in tmp_path.iterdir()) == ["backup.json", "backup.json.gz"]  # no partial files left
    # The same state gives the same bytes (sorted keys, no timestamp in the gzip header).
    assert encode_document(document, compress=True) == encode_document(copy.deepcopy(document), compress=True)
