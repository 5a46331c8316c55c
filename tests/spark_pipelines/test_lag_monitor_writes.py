"""The evaluator's writes without brokers: only rows whose values changed are upserted, history
points come at status changes and each history interval, unchanged rows are touched in one
UPDATE, forgotten groups are deleted; and its settings refuse values it cannot use, naming them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from spark_pipelines.lag_book import PartitionFacts
from spark_pipelines.lag_monitor import InvalidMonitorOptionError, LagMonitor, MonitorOptions
from spark_pipelines.lag_offsets_log import Commit
from webapp.accounts.models import Tenant
from webapp.metering import writer
from webapp.metering.models import GroupLag, GroupLagHistory, PartitionLag

pytestmark = pytest.mark.django_db

START = 1_750_000_000.0


class Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.changes: list[dict[str, Any]] = []
        self.touches = 0
        original_changes, original_touch = writer.write_lag_changes, writer.touch_lag

        def changes(evaluated_at: datetime, partitions: Any, groups: Any, **extra: Any) -> int:
            partitions, groups = list(partitions), list(groups)
            self.changes.append({"partitions": len(partitions), "groups": len(groups), **{key: len(list(value)) for key, value in extra.items()}})
            return original_changes(evaluated_at, partitions, groups, **extra)

        def touch(evaluated_at: datetime) -> int:
            self.touches += 1
            return original_touch(evaluated_at)

        monkeypatch.setattr(writer, "write_lag_changes", changes)
        monkeypatch.setattr(writer, "touch_lag", touch)


def evaluate_and_write(monitor: LagMonitor, now: float) -> int:
    partitions, groups = monitor.book.evaluate(int(now * 1000), {})
    return monitor._write(now, partitions, groups)


def test_only_changes_are_written_and_unchanged_rows_are_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    tenant = Tenant.objects.create(name="Acme", slug="acme").public_id
    monitor = LagMonitor({"bootstrap.servers": "127.0.0.1:1"}, MonitorOptions(touch_seconds=30, history_seconds=60))
    partition = (tenant, "orders", 0)
    monitor.book.observe(partition, PartitionFacts(10, 0))
    monitor.book.apply(Commit((tenant, "billing", "orders", 0), 10, int(START * 1000), 1))
    monitor.book.apply(Commit((tenant, "audit", "orders", 0), 10, int(START * 1000), 2))

    assert evaluate_and_write(monitor, START + 1) == 4  # two partitions, two groups
    first_pk = PartitionLag.objects.get(group="billing").pk
    assert evaluate_and_write(monitor, START + 2) == 0  # nothing changed: no write
    assert calls.changes == [{"partitions": 2, "groups": 2, "removed_partitions": 0, "removed_groups": 0, "history": 2}]

    monitor.book.apply(Commit((tenant, "billing", "orders", 0), 10, int((START + 3) * 1000), 3))  # same offset again: window grows, values the same
    monitor.book.observe(partition, PartitionFacts(15, 0))  # records arrive: both groups lag 5
    evaluate_and_write(monitor, START + 4)
    assert calls.changes[-1]["partitions"] == 2 and PartitionLag.objects.get(group="billing").offset_lag == 5
    assert PartitionLag.objects.get(group="billing").pk == first_pk  # updated in place

    monitor.book.apply(Commit((tenant, "audit", "orders", 0), None, None, 4))  # the group's offsets were deleted
    evaluate_and_write(monitor, START + 6)
    assert calls.changes[-1]["removed_groups"] == 1 and not GroupLag.objects.filter(group="audit").exists()

    evaluate_and_write(monitor, START + 31)  # unchanged for 30 s: one touch, no upsert
    assert calls.touches >= 1
    assert GroupLag.objects.get(group="billing").evaluated_at == datetime.fromtimestamp(START + 31, tz=UTC)
    assert GroupLagHistory.objects.filter(group="billing").count() == 1  # no status change, and the 60 s history interval has not passed


def test_settings_refuse_values_naming_the_variable() -> None:
    assert MonitorOptions.from_env({}) == MonitorOptions()
    assert MonitorOptions.from_env({"WEIR_LAG_ALLOWED_LAG": "25", "WEIR_LAG_REFRESH_SECONDS": "5"}).book_settings().allowed_lag == 25
    for variable, value in (
        ("WEIR_LAG_REFRESH_SECONDS", "0"),
        ("WEIR_LAG_WINDOW_SIZE", "ten"),
        ("WEIR_LAG_ALLOWED_LAG", "-1"),
        ("WEIR_LAG_MINIMUM_COMPLETE", "2"),
    ):
        with pytest.raises(InvalidMonitorOptionError, match=variable):
            MonitorOptions.from_env({variable: value})
