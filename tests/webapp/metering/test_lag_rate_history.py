"""The lag history keeps the group's lag rate at each point: the evaluator rolls its partitions'
rates up into the group (their sum), the writer stores it beside the total lag, and pruning
forgets it with the rest of the point; the REST lag history answers it per point."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from spark_pipelines.lag_book import PartitionEvaluation, roll_up
from spark_pipelines.lag_monitor import group_row, partition_row
from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role
from webapp.metering import writer
from webapp.metering.models import GroupLagHistory

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 3, 1, 10, tzinfo=UTC)


def evaluation(tenant_id: str, partition: int, lag: int, rate: float | None) -> PartitionEvaluation:
    return PartitionEvaluation(
        tenant_id=tenant_id,
        group="billing",
        topic="orders",
        partition=partition,
        committed_offset=100,
        end_offset=100 + lag,
        log_start_offset=0,
        offset_lag=lag,
        time_lag_seconds=None,
        status="WARNING" if rate and rate > 0 else "OK",
        last_commit_ms=int(NOW.timestamp() * 1000),
        lag_rate=rate,
        catch_up_seconds=None,
        retention_seconds=None,
        retention_status="OK",
    )


def write_point(when: datetime, partitions: list[PartitionEvaluation]) -> None:
    """What the evaluator writes when a history point is due: every row, the group's as history too."""
    group: dict[str, Any] = group_row(roll_up(partitions[0].tenant_id, "billing", partitions))
    writer.write_lag_changes(when, [partition_row(row) for row in partitions], [group], history=[group])


def test_a_history_point_keeps_the_sum_of_the_partitions_rates_signed(acme: TenantFixture) -> None:
    tenant = acme.tenant.public_id
    write_point(NOW, [evaluation(tenant, 0, 40, 12.5), evaluation(tenant, 1, 10, -2.5)])
    write_point(NOW + timedelta(minutes=1), [evaluation(tenant, 0, 20, -8.0), evaluation(tenant, 1, 5, -1.5)])

    points = GroupLagHistory.objects.filter(tenant=acme.tenant, group="billing").order_by("evaluated_at")
    assert [(point.total_lag, point.lag_rate) for point in points] == [(50, 10.0), (25, -9.5)]


def test_a_point_without_any_partition_rate_keeps_none_not_zero(acme: TenantFixture) -> None:
    tenant = acme.tenant.public_id
    write_point(NOW, [evaluation(tenant, 0, 40, None), evaluation(tenant, 1, 10, None)])

    assert GroupLagHistory.objects.get(tenant=acme.tenant).lag_rate is None


def test_pruning_forgets_old_rates_with_their_points(acme: TenantFixture, settings: Any) -> None:
    settings.WEIR_METERING_HISTORY_DAYS = 1
    tenant = acme.tenant.public_id
    write_point(NOW, [evaluation(tenant, 0, 40, 3.0)])
    write_point(NOW + timedelta(days=1), [evaluation(tenant, 0, 30, -1.0)])

    writer.touch_lag(NOW + timedelta(days=1, minutes=1))

    assert list(GroupLagHistory.objects.values_list("lag_rate", flat=True)) == [-1.0]


def test_the_rest_lag_history_answers_the_rate_of_each_point_to_its_tenant_only(acme: TenantFixture, globex: TenantFixture) -> None:
    tenant = acme.tenant.public_id
    now = timezone.now()
    write_point(now - timedelta(minutes=2), [evaluation(tenant, 0, 40, None)])
    write_point(now - timedelta(minutes=1), [evaluation(tenant, 0, 60, 0.25), evaluation(tenant, 1, 5, 1.0)])

    response = acme.client(Role.VIEWER).get("/api/v1/consumer-groups/billing/lag/history")
    foreign = globex.client(Role.OWNER).get("/api/v1/consumer-groups/billing/lag/history")

    assert response.status_code == 200, response.content
    assert [(point["total_lag"], point["lag_rate"]) for point in response.json()["results"]] == [(40, None), (65, 1.25)]
    assert foreign.status_code == 404
