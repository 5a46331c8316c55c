"""The pipelines' writer: bulk upserts that are idempotent, unknown tenants skipped and
counted, lag upserted row by row as the evaluator finds it changed (history appended when
given, pruned when rows are touched), state per pipeline and the evaluator's windows, and
malformed rows refused before anything is written."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.webapp.api.conftest import TenantFixture
from webapp.metering import writer
from webapp.metering.models import GroupLag, GroupLagHistory, PartitionLag, UsageAggregate

pytestmark = pytest.mark.django_db

HOUR = datetime(2025, 3, 1, 10, tzinfo=UTC)


def usage_row(tenant_id: str, topic: str = "orders", bucket_start: datetime = HOUR, **values: Any) -> dict[str, Any]:
    row = {
        "tenant_id": tenant_id,
        "topic": topic,
        "bucket_start": bucket_start,
        "bytes_in": 1000,
        "bytes_out": 3000,
        "records_in": 10,
        "records_out": 30,
        "produce_requests": 2,
        "fetch_requests": 6,
        "throttle_time_ms": 0,
        "storage_bytes_avg": 5000,
        "storage_bytes_peak": 6000,
        "partition_hours": 3.0,
    }
    return {**row, **values}


def partition_row(tenant_id: str, group: str, topic: str, partition: int, lag: int = 5, status: str = "OK") -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "group": group,
        "topic": topic,
        "partition": partition,
        "committed_offset": 100,
        "end_offset": 100 + lag,
        "log_start_offset": 0,
        "offset_lag": lag,
        "time_lag_seconds": 1.5,
        "status": status,
        "retention_risk": False,
        "last_commit_at": HOUR,
    }


def group_row(tenant_id: str, group: str, status: str = "OK", total: int = 5, partitions: int = 1) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "group": group,
        "status": status,
        "max_lag": total,
        "total_lag": total,
        "max_time_lag_seconds": 1.5,
        "partition_count": partitions,
        "retention_risk": False,
        "worst_partition": {"topic": "orders", "partition": 0, "status": status},
    }


def test_write_usage_twice_leaves_one_row_per_bucket(acme: TenantFixture) -> None:
    rows = [usage_row(acme.tenant.public_id), usage_row(acme.tenant.public_id, topic="payments")]

    first = writer.write_usage("hour", rows)
    second = writer.write_usage("hour", rows)

    assert (first, second) == (2, 2)
    assert UsageAggregate.objects.filter(tenant=acme.tenant, granularity="hour").count() == 2


def test_write_usage_replaces_the_values_of_an_existing_bucket(acme: TenantFixture) -> None:
    writer.write_usage("hour", [usage_row(acme.tenant.public_id)])
    writer.write_usage("hour", [usage_row(acme.tenant.public_id, bytes_in=4242, partition_hours=2.5)])
    writer.write_usage("day", [usage_row(acme.tenant.public_id, bucket_start=HOUR.replace(hour=0), bytes_in=99)])

    hourly = UsageAggregate.objects.get(tenant=acme.tenant, granularity="hour")
    daily = UsageAggregate.objects.get(tenant=acme.tenant, granularity="day")
    assert (hourly.bytes_in, hourly.partition_hours, hourly.bytes_out) == (4242, 2.5, 3000)
    assert daily.bytes_in == 99


def test_write_usage_keeps_the_last_of_repeated_keys_in_one_call(acme: TenantFixture) -> None:
    written = writer.write_usage("hour", [usage_row(acme.tenant.public_id, bytes_in=1), usage_row(acme.tenant.public_id, bytes_in=2)])

    assert written == 1
    assert UsageAggregate.objects.get().bytes_in == 2


def test_write_usage_skips_rows_of_unknown_and_empty_tenants_and_says_so(acme: TenantFixture, caplog: pytest.LogCaptureFixture) -> None:
    rows = [usage_row(acme.tenant.public_id), usage_row("tn-deleted0000"), usage_row(""), usage_row("tn-deleted0000", topic="other")]

    with caplog.at_level(logging.INFO, logger="webapp.metering.writer"):
        written = writer.write_usage("hour", rows)

    assert written == 1
    assert list(UsageAggregate.objects.values_list("tenant__public_id", flat=True)) == [acme.tenant.public_id]
    assert "skipped 3 of 4 rows of unknown tenants" in caplog.text and "tn-deleted0000 (2)" in caplog.text


@pytest.mark.parametrize(
    "change,problem",
    [
        ({"bucket_start": HOUR + timedelta(minutes=5)}, "not the start of a UTC hour"),
        ({"bucket_start": HOUR.replace(tzinfo=None)}, "timezone-aware"),
        ({"bytes_in": None}, "bytes_in is missing"),
        ({"bytes_in": 1.5}, "bytes_in must be an integer"),
        ({"partition_hours": float("nan")}, "finite"),
        ({"topic": ""}, "topic must be a non-empty string"),
    ],
)
def test_write_usage_refuses_a_malformed_row_and_writes_nothing(acme: TenantFixture, change: dict[str, Any], problem: str) -> None:
    rows = [usage_row(acme.tenant.public_id, topic="fine"), usage_row(acme.tenant.public_id, **change)]

    with pytest.raises(writer.InvalidRow, match=problem) as raised:
        writer.write_usage("hour", rows)

    assert raised.value.index == 1
    assert not UsageAggregate.objects.exists()


def test_write_usage_day_buckets_start_at_midnight_utc(acme: TenantFixture) -> None:
    with pytest.raises(writer.InvalidRow, match="UTC day"):
        writer.write_usage("day", [usage_row(acme.tenant.public_id)])
    with pytest.raises(ValueError, match="granularity"):
        writer.write_usage("week", [])


def test_write_usage_takes_numpy_like_integers_and_whole_floats(acme: TenantFixture) -> None:
    class Int64(int):
        pass

    writer.write_usage("hour", [usage_row(acme.tenant.public_id, bytes_in=Int64(7), records_in=12.0)])

    assert (UsageAggregate.objects.get().bytes_in, UsageAggregate.objects.get().records_in) == (7, 12)


def write_snapshot(evaluated_at: datetime, partitions: list[dict[str, Any]], groups: list[dict[str, Any]]) -> int:
    """The evaluator's write of groups that all changed, with a history point each (the other tests' fixtures)."""
    return writer.write_lag_changes(evaluated_at, partitions, groups, history=groups)


def test_write_lag_changes_upserts_only_the_rows_given_and_deletes_the_removed(acme: TenantFixture, globex: TenantFixture) -> None:
    tenant = acme.tenant.public_id
    first = HOUR
    write_snapshot(
        first,
        [partition_row(tenant, "billing", "orders", 0), partition_row(tenant, "billing", "orders", 1), partition_row(tenant, "audit", "orders", 0)],
        [group_row(tenant, "billing", partitions=2), group_row(tenant, "audit")],
    )
    write_snapshot(first, [partition_row(globex.tenant.public_id, "billing", "orders", 0)], [group_row(globex.tenant.public_id, "billing")])
    first_ids = dict(PartitionLag.objects.filter(tenant=acme.tenant).values_list("group", "pk"))

    written = writer.write_lag_changes(
        first + timedelta(minutes=1),
        [{**partition_row(tenant, "billing", "orders", 0, lag=50, status="WARNING"), "lag_rate": 2.5, "catch_up_seconds": None, "retention_status": "AT_RISK"}],
        [{**group_row(tenant, "billing", status="WARNING", total=50), "retention_seconds": 30.0, "retention_status": "AT_RISK"}],
        removed_partitions=[(tenant, "billing", "orders", 1)],
    )

    assert written == 2
    billing = PartitionLag.objects.filter(tenant=acme.tenant, group="billing")
    assert [(row.partition, row.offset_lag, row.status, row.lag_rate, row.retention_status) for row in billing] == [(0, 50, "WARNING", 2.5, "AT_RISK")]
    # Rows not given keep theirs (and their primary keys: an update, not delete and insert), as do other tenants'.
    assert PartitionLag.objects.get(tenant=acme.tenant, group="audit").pk == first_ids["audit"]
    assert PartitionLag.objects.filter(tenant=globex.tenant, group="billing").get().offset_lag == 5
    group = GroupLag.objects.get(tenant=acme.tenant, group="billing")
    assert (group.status, group.total_lag, group.evaluated_at, group.retention_seconds, group.retention_status) == (
        "WARNING",
        50,
        first + timedelta(minutes=1),
        30.0,
        "AT_RISK",
    )
    writer.write_lag_changes(first + timedelta(minutes=2), [], [], removed_partitions=[(tenant, "audit", "orders", 0)], removed_groups=[(tenant, "audit")])
    assert not GroupLag.objects.filter(tenant=acme.tenant, group="audit").exists()
    assert not PartitionLag.objects.filter(tenant=acme.tenant, group="audit").exists()


def test_history_points_are_appended_only_when_given(acme: TenantFixture) -> None:
    tenant = acme.tenant.public_id
    for minute, total in enumerate([5, 9, 2]):
        write_snapshot(
            HOUR + timedelta(minutes=minute), [partition_row(tenant, "billing", "orders", 0, lag=total)], [group_row(tenant, "billing", total=total)]
        )
    writer.write_lag_changes(HOUR + timedelta(minutes=4), [partition_row(tenant, "billing", "orders", 0, lag=3)], [group_row(tenant, "billing", total=3)])

    history = GroupLagHistory.objects.filter(tenant=acme.tenant, group="billing").order_by("evaluated_at")
    assert [point.total_lag for point in history] == [5, 9, 2]
    assert GroupLag.objects.get(tenant=acme.tenant, group="billing").total_lag == 3


def test_touch_marks_every_row_evaluated_and_forgets_old_history(acme: TenantFixture, settings: Any) -> None:
    settings.WEIR_METERING_HISTORY_DAYS = 1
    tenant = acme.tenant.public_id
    write_snapshot(HOUR, [partition_row(tenant, "billing", "orders", 0)], [group_row(tenant, "billing")])
    later = HOUR + timedelta(days=1, minutes=1)

    assert writer.touch_lag(later) == 1

    assert GroupLag.objects.get().evaluated_at == later and PartitionLag.objects.get().evaluated_at == later
    assert not GroupLagHistory.objects.exists()


def test_write_lag_changes_refuses_malformed_rows_and_writes_nothing(acme: TenantFixture) -> None:
    tenant = acme.tenant.public_id

    with pytest.raises(writer.InvalidRow, match="status must be one of"):
        writer.write_lag_changes(HOUR, [], [group_row(tenant, "billing", status="STALL")])
    with pytest.raises(writer.InvalidRow, match="retention_status must be one of"):
        writer.write_lag_changes(HOUR, [{**partition_row(tenant, "billing", "orders", 0), "retention_status": "SOON"}], [])
    with pytest.raises(ValueError, match="timezone-aware"):
        writer.write_lag_changes(HOUR.replace(tzinfo=None), [], [])

    assert not GroupLag.objects.exists() and not GroupLagHistory.objects.exists() and not PartitionLag.objects.exists()


def test_write_lag_changes_skips_unknown_tenants(acme: TenantFixture) -> None:
    written = writer.write_lag_changes(
        HOUR, [partition_row("tn-gone000000", "g", "t", 0)], [group_row("tn-gone000000", "g"), group_row(acme.tenant.public_id, "mine", partitions=0)]
    )

    assert written == 1
    assert list(GroupLag.objects.values_list("group", flat=True)) == ["mine"]


def test_the_lag_monitor_state_saves_changed_windows_with_its_cursor(db: None) -> None:
    assert writer.load_lag_monitor_state() == ({}, [])
    key = ("tn-a", "billing", "orders", 0)
    other = ("tn-a", "billing", "orders", 1)
    writer.save_lag_monitor_state({"version": 1, "offsets": {"0": 5}}, {key: {"commits": [[1, 2, 3, 4]]}, other: {"commits": []}}, [])
    writer.save_lag_monitor_state({"version": 1, "offsets": {"0": 9}}, {key: {"commits": [[5, 6, 7, None]]}}, [other])

    document, windows = writer.load_lag_monitor_state()
    assert document == {"version": 1, "offsets": {"0": 9}}
    assert windows == [(key, {"commits": [[5, 6, 7, None]]})]
    with pytest.raises(TypeError):
        writer.save_lag_monitor_state([], {}, [])  # type: ignore[arg-type]


def test_state_is_kept_per_pipeline(db: None) -> None:
    assert writer.load_state("usage") == {}

    writer.save_state("usage", {"offsets": {"0": 12}})
    writer.save_state("usage", {"offsets": {"0": 40, "1": 3}})
    writer.save_state("lag", {"windows": []})

    assert writer.load_state("usage") == {"offsets": {"0": 40, "1": 3}}
    assert writer.load_state("lag") == {"windows": []}
    with pytest.raises(TypeError):
        writer.save_state("usage", ["not", "a", "dict"])  # type: ignore[arg-type]


def test_writer_imports_without_django_and_sets_it_up_itself() -> None:
    script = (
        "import django.apps\n"
        "from webapp.metering import writer\n"
        "assert not django.apps.apps.ready\n"
        "writer.ensure_django()\n"
        "print(django.apps.apps.ready, django.apps.apps.is_installed('webapp.metering'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=_environment_without_settings())

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True True"


def _environment_without_settings() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
