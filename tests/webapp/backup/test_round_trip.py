"""Backup -> restore gives back the same control plane: the same document, the same snapshots
for the brokers (so a push gives them the same keys, ACLs, quotas and topics), working sign-ins."""

from __future__ import annotations

import gzip
import json
import stat
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.processes import free_port
from tests.webapp.backup.conftest import PASSWORD, build_control_plane, register_brokers
from webapp.accounts.models import ApiKey, Tenant
from webapp.backup.document import check_document, encode_document, parse_backup_bytes
from webapp.backup.dump import dump_control_plane
from webapp.backup.errors import BackupFormatError, RestoreRefusedError
from webapp.backup.load import existing_rows, restore_control_plane
from webapp.catalog.models import AclBinding, Partition, Topic
from webapp.provisioning.snapshots import build_snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def control_plane():  # type: ignore[no-untyped-def]
    register_brokers({1: free_port(), 2: free_port(), 3: free_port()})
    return build_control_plane()


def round_trip(document: dict) -> dict:
    """The document as it comes back from a gzip file."""
    return parse_backup_bytes(encode_document(document, compress=True), "backup.json.gz")


def test_a_restored_database_backs_up_to_the_same_document(control_plane) -> None:  # type: ignore[no-untyped-def]
    before = dump_control_plane()
    assert {name: len(rows) for name, rows in before["sections"].items() if rows} == {
        "permission_groups": 1,
        "users": 4,
        "tenants": 2,
        "memberships": 3,
        "invitations": 1,
        "service_accounts": 1,
        "api_keys": 3,
        "scram_credentials": 4,  # SCRAM-SHA-256 and -512 of each of the two cluster keys
        "topics": 6,
        "partitions": 3 + 1 + 2 + 50 + 50 + 3,  # tenants' topics, __consumer_offsets, __transaction_state, __usage
        "acl_bindings": 4,
        "quotas": 2,
        "brokers": 3,
        "controller_epoch": 1,
        "snapshot_versions": 2,
    }
    report = restore_control_plane(check_document(round_trip(before)), clear_existing=True)
    assert report.cleared["tenants"] == 2 and report.restored["partitions"] == 109
    after = dump_control_plane()
    assert after["sections"] == before["sections"]
    assert after["migrations"] == before["migrations"]


def test_snapshots_pushed_after_a_restore_equal_those_before(control_plane) -> None:  # type: ignore[no-untyped-def]
    before = build_snapshots(["partitions", "security"])
    document = round_trip(dump_control_plane())
    restore_control_plane(check_document(document), clear_existing=True)
    after = build_snapshots(["partitions", "security"])
    # Byte for byte: the same credentials (key ids, secret hashes, principals), ACLs, quotas,
    # topics with their ids, configs and placement, at the same versions.
    assert after.security == before.security
    assert after.partitions == before.partitions
    assert {credential.api_key for credential in after.security.credentials} == {control_plane.cluster_key_id}
    assert [scram.mechanism for scram in after.security.credentials[0].scram] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert len(after.security.acls) == 4


def test_users_sign_in_with_their_passwords_after_a_restore(control_plane) -> None:  # type: ignore[no-untyped-def]
    restore_control_plane(check_document(round_trip(dump_control_plane())), clear_existing=True)
    user = authenticate(username="acme-owner", password=PASSWORD)
    assert user is not None and user.memberships.get().tenant.name == "Acme"
    operator = authenticate(username="operator", password=PASSWORD)
    assert operator is not None and operator.has_perm("fleet.change_brokernode") and operator.has_perm("accounts.view_tenant")
    assert authenticate(username="acme-owner", password="not-the-password") is None


def test_restore_refuses_a_database_that_is_not_empty_and_changes_nothing(control_plane) -> None:  # type: ignore[no-untyped-def]
    document = dump_control_plane()
    with pytest.raises(RestoreRefusedError, match=r"not empty \(it holds 1 permission_groups, 4 users, 2 tenants"):
        restore_control_plane(check_document(document))
    assert Tenant.objects.count() == 2 and Partition.objects.count() == 109


def test_restore_refuses_a_database_without_the_backups_migrations(control_plane) -> None:  # type: ignore[no-untyped-def]
    document = dump_control_plane()
    document["migrations"].append("catalog.0099_from_the_future")
    with pytest.raises(RestoreRefusedError, match="lacks migrations the backup was taken with: catalog.0099_from_the_future"):
        restore_control_plane(check_document(document), clear_existing=True)
    assert Tenant.objects.count() == 2


def test_a_failing_restore_leaves_the_database_as_it_was(control_plane) -> None:  # type: ignore[no-untyped-def]
    document = dump_control_plane()
    document["sections"]["users"][0]["user_permissions"] = ["accounts.launch_rockets"]
    counts = existing_rows()
    with pytest.raises(BackupFormatError, match=r"sections.users\[0\].user_permissions: this database has no permission 'accounts.launch_rockets'"):
        restore_control_plane(check_document(document), clear_existing=True)
    assert existing_rows() == counts
    assert ApiKey.objects.filter(key_id=control_plane.cluster_key_id).exists()


def test_backup_and_restore_commands_with_a_compressed_file(control_plane, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "weir.json.gz"
    call_command("backup", "--output", str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    document = json.loads(gzip.decompress(path.read_bytes()))
    assert document["format"] == "weir-control-plane-backup" and document["format_version"] == 1
    assert "weir_cluster_" not in path.read_bytes().decode("latin-1") + json.dumps(document)  # hashes only, never a secret
    call_command("restore", str(path), "--check")
    assert "is a valid backup" in capsys.readouterr().out
    with pytest.raises(CommandError, match="restore refused: the database is not empty"):
        call_command("restore", str(path))
    AclBinding.objects.all().delete()
    call_command("restore", str(path), "--clear-existing")
    assert AclBinding.objects.count() == 4
    assert "resync_brokers" in capsys.readouterr().out


def test_restore_command_names_what_is_wrong_with_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"format": "weir-control-plane-backup", "format_version": 7}')
    with pytest.raises(CommandError, match="format_version: the backup has format version 7, written by a newer Weir"):
        call_command("restore", str(path))
    with pytest.raises(CommandError, match="cannot read it"):
        call_command("restore", str(tmp_path / "missing.json"))


@pytest.mark.django_db(transaction=True)
def test_backup_outside_a_transaction_reads_one_snapshot_of_the_database(tmp_path: Path) -> None:
    Tenant.objects.create(name="Solo", slug="solo")
    Topic.objects.create(tenant=None, name="__usage", partition_count=0)
    with CaptureQueriesContext(connection) as queries:
        call_command("backup", "--output", str(tmp_path / "weir.json"))
    if connection.vendor == "postgresql":
        statements = [query["sql"] for query in queries.captured_queries if query["sql"] != "BEGIN"]
        assert statements[0] == "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
    Tenant.objects.all().delete()
    Topic.objects.all().delete()
    call_command("restore", str(tmp_path / "weir.json"))
    assert list(Tenant.objects.values_list("slug", flat=True)) == ["solo"]
    assert Topic.objects.get().tenant is None
