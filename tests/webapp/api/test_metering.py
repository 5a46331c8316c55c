"""``/usage`` (JSON pages and CSV), the lag pipeline's ``/consumer-groups/{g}/lag``,
``/lag/history`` and ``/consumer-groups:lag-status``, ``/pipelines`` (a tenant's) and ``/pipeline-runs``
(operators'): validation
errors name the parameter, tenants see only their own, empty states say what is missing.

Data is written with the pipelines' writer, as the jobs write it.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone as django_timezone
from rest_framework.test import APIClient

from tests.webapp.api.conftest import PASSWORD, TenantFixture
from tests.webapp.metering.test_writer import group_row, partition_row, usage_row, write_snapshot
from webapp.accounts.models import Role
from webapp.metering import writer
from webapp.metering.models import PipelineRun, RunStatus
from webapp.metering.usage_export import USAGE_CSV_COLUMNS

pytestmark = pytest.mark.django_db


def this_hour(hours_ago: int = 0) -> datetime:
    return django_timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours_ago)


@pytest.fixture
def usage(acme: TenantFixture, globex: TenantFixture) -> None:
    """acme: orders and payments over the last hours (and one row two days ago); globex: its own orders."""
    tenant = acme.tenant.public_id
    writer.write_usage(
        "hour",
        [
            usage_row(tenant, "orders", this_hour(1), bytes_in=100),
            usage_row(tenant, "orders", this_hour(2), bytes_in=200),
            usage_row(tenant, "payments", this_hour(1), bytes_in=300),
            usage_row(tenant, "orders", this_hour(48), bytes_in=999),
            usage_row(globex.tenant.public_id, "orders", this_hour(1), bytes_in=123456),
        ],
    )
    writer.write_usage("day", [usage_row(tenant, "orders", this_hour(0).replace(hour=0) - timedelta(days=3), bytes_in=5000)])


def test_usage_defaults_to_the_last_24_hours_per_hour(acme: TenantFixture, usage: None) -> None:
    response = acme.client(Role.VIEWER).get("/api/v1/usage")

    body = response.json()
    assert response.status_code == 200, body
    assert (body["kind"], body["cluster_id"], body["granularity"], body["topic_name"]) == ("WeirUsageList", acme.tenant.public_id, "hour", None)
    assert [(row["topic_name"], row["bytes_in"]) for row in body["results"]] == [("orders", 200), ("orders", 100), ("payments", 300)]
    assert datetime.fromisoformat(body["to"]) - datetime.fromisoformat(body["from"]) == timedelta(hours=24)
    assert set(body["results"][0]) == {
        "topic_name",
        "granularity",
        "bucket_start",
        "bytes_in",
        "bytes_out",
        "records_in",
        "records_out",
        "produce_requests",
        "fetch_requests",
        "throttle_time_ms",
        "storage_bytes_avg",
        "storage_bytes_peak",
        "partition_hours",
    }


def test_usage_per_day_with_a_window_and_a_topic(acme: TenantFixture, usage: None) -> None:
    client = acme.client(Role.VIEWER)

    daily = client.get("/api/v1/usage", {"granularity": "day"}).json()
    window = client.get("/api/v1/usage", {"from": this_hour(72).isoformat(), "to": this_hour(1).isoformat(), "topic": "orders"}).json()

    assert [row["bytes_in"] for row in daily["results"]] == [5000]
    assert [row["bytes_in"] for row in window["results"]] == [999, 200]  # "to" is exclusive
    assert window["topic_name"] == "orders"


def test_usage_pages_follow_the_next_link(acme: TenantFixture, usage: None) -> None:
    client = acme.client(Role.VIEWER)

    first = client.get("/api/v1/usage", {"page_size": 2}).json()
    second = client.get(first["next"]).json()

    assert [row["bytes_in"] for row in first["results"] + second["results"]] == [200, 100, 300]
    assert second["next"] is None


def test_a_time_with_its_plus_sign_turned_into_a_space_is_read_as_meant(acme: TenantFixture, usage: None) -> None:
    start = this_hour(3).astimezone(timezone(timedelta(hours=2)))
    mangled = start.isoformat().replace("+", " ")

    body = acme.client(Role.VIEWER).get(f"/api/v1/usage?from={mangled}").json()

    assert datetime.fromisoformat(body["from"]) == start


@pytest.mark.parametrize(
    "query,parameter",
    [
        ({"granularity": "week"}, "granularity"),
        ({"from": "yesterday"}, "from"),
        ({"to": "2025-13-45"}, "to"),
        ({"topic": "x" * 250}, "topic"),
        ({"topic": ""}, "topic"),
        ({"format": "xml"}, "format"),
        ({"page_size": "ten"}, "page_size"),
        ({"page_size": "0"}, "page_size"),
        ({"page_size": ["5", "6"]}, "page_size"),
        ({"granularity": ["hour", "day"]}, "granularity"),
        ({"cursor": "not a cursor!"}, "cursor"),
    ],
)
def test_a_bad_usage_parameter_is_a_400_naming_it(acme: TenantFixture, query: dict[str, Any], parameter: str) -> None:
    response = acme.client(Role.VIEWER).get("/api/v1/usage", query)

    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error_code"] == 400 and list(body["errors"]) == [parameter], body


@pytest.mark.parametrize(
    "query", [{"from": "2025-02-01", "to": "2025-01-01"}, {"from": "2025-01-01", "to": "2025-01-01"}, {"from": "0001-01-01T00:00:00Z", "to": "1960-01-01"}]
)
def test_a_window_that_ends_before_it_starts_or_before_1970_is_empty(acme: TenantFixture, usage: None, query: dict[str, str]) -> None:
    # Any two ISO 8601 times are a valid window (the schema cannot say that from precedes to).
    response = acme.client(Role.VIEWER).get("/api/v1/usage", query)

    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


def test_usage_as_csv_has_a_stable_header_and_every_row(acme: TenantFixture, usage: None) -> None:
    response = acme.client(Role.VIEWER).get("/api/v1/usage", {"format": "csv", "topic": "orders"})

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith(f'attachment; filename="usage-{acme.tenant.public_id}-hour-')
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == list(USAGE_CSV_COLUMNS)
    assert rows[0][:4] == ["tenant_id", "topic", "granularity", "bucket_start"]
    assert [(row[0], row[1], row[2], row[4]) for row in rows[1:]] == [
        (acme.tenant.public_id, "orders", "hour", "200"),
        (acme.tenant.public_id, "orders", "hour", "100"),
    ]
    assert rows[1][3] == this_hour(2).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_usage_as_csv_by_accept_header_and_errors_stay_json(acme: TenantFixture, usage: None) -> None:
    client = acme.client(Role.VIEWER)

    by_header = client.get("/api/v1/usage", HTTP_ACCEPT="text/csv")
    error = client.get("/api/v1/usage", {"granularity": "minute"}, HTTP_ACCEPT="text/csv")

    assert by_header["Content-Type"].startswith("text/csv")
    assert len(b"".join(by_header.streaming_content).decode().splitlines()) == 4
    assert error.status_code == 400 and error.json()["errors"]["granularity"]


def test_usage_of_a_tenant_without_any_is_empty(globex: TenantFixture, acme: TenantFixture) -> None:
    body = acme.client(Role.VIEWER).get("/api/v1/usage").json()
    csv_body = b"".join(acme.client(Role.VIEWER).get("/api/v1/usage?format=csv").streaming_content).decode()

    assert body["results"] == [] and body["next"] is None
    assert csv_body.splitlines() == [",".join(USAGE_CSV_COLUMNS)]


def test_usage_is_the_callers_tenants_only(acme: TenantFixture, globex: TenantFixture, usage: None) -> None:
    body = globex.client(Role.OWNER).get("/api/v1/usage").json()
    exported = b"".join(globex.client(Role.OWNER).get("/api/v1/usage?format=csv").streaming_content).decode()

    assert [(row["topic_name"], row["bytes_in"]) for row in body["results"]] == [("orders", 123456)]
    assert acme.tenant.public_id not in exported and "payments" not in exported


@pytest.fixture
def lag(acme: TenantFixture, globex: TenantFixture) -> datetime:
    """acme's groups billing (ERROR: a STALL partition at retention risk, three evaluations) and
    audit (OK); globex's own billing. Returns the last evaluation time."""
    tenant = acme.tenant.public_id
    now = django_timezone.now().replace(microsecond=0)
    for minutes_ago, total in ((2, 10), (1, 20)):
        write_snapshot(
            now - timedelta(minutes=minutes_ago), [partition_row(tenant, "billing", "orders", 0, lag=total)], [group_row(tenant, "billing", "WARNING", total)]
        )
    stalled = {**partition_row(tenant, "billing", "orders", 1, lag=40, status="STALL"), "retention_risk": True, "time_lag_seconds": None}
    billing = {
        **group_row(tenant, "billing", "ERROR", 70, partitions=2),
        "max_lag": 40,
        "retention_risk": True,
        "worst_partition": {"topic": "orders", "partition": 1, "status": "STALL"},
    }
    write_snapshot(
        now,
        [partition_row(tenant, "billing", "orders", 0, lag=30), stalled, partition_row(tenant, "audit", "orders", 0, lag=0)],
        [billing, group_row(tenant, "audit", "OK", 0)],
    )
    write_snapshot(now, [partition_row(globex.tenant.public_id, "billing", "orders", 0, lag=1)], [group_row(globex.tenant.public_id, "billing", "OK", 1)])
    return now


def test_group_lag_is_the_pipelines_latest_evaluation(acme: TenantFixture, lag: datetime) -> None:
    response = acme.client(Role.VIEWER).get("/api/v1/consumer-groups/billing/lag")

    body = response.json()
    assert response.status_code == 200, body
    assert (body["kind"], body["consumer_group_id"], body["status"], body["stale"]) == ("WeirConsumerGroupLag", "billing", "ERROR", False)
    assert (body["total_lag"], body["max_lag"], body["partitions_count"], body["retention_risk"]) == (70, 40, 2, True)
    assert datetime.fromisoformat(body["evaluated_at"].replace("Z", "+00:00")) == lag
    assert body["worst_partition"] == {"topic_name": "orders", "partition_id": 1, "status": "STALL"}
    assert [(row["partition_id"], row["status"], row["lag"], row["retention_risk"], row["time_lag_seconds"]) for row in body["partitions"]] == [
        (0, "OK", 30, False, 1.5),
        (1, "STALL", 40, True, None),
    ]
    assert body["history"]["related"].endswith("/api/v1/consumer-groups/billing/lag/history")
    assert body["live_lag_summary"]["related"].endswith("/api/v1/consumer-groups/billing/lag-summary")
    assert body["metadata"]["resource_name"] == f"crn://weir/tenant={acme.tenant.public_id}/consumer-group=billing/lag"


def test_an_evaluation_older_than_three_intervals_is_stale(acme: TenantFixture, lag: datetime, settings: Any) -> None:
    settings.WEIR_LAG_TOUCH_SECONDS = 60  # stale after 3 minutes without the monitor touching it
    tenant = acme.tenant.public_id
    write_snapshot(lag - timedelta(minutes=10), [partition_row(tenant, "forgotten", "orders", 0)], [group_row(tenant, "forgotten")])

    body = acme.client(Role.VIEWER).get("/api/v1/consumer-groups/forgotten/lag").json()
    listed = acme.client(Role.VIEWER).get("/api/v1/consumer-groups:lag-status").json()["results"]

    assert body["stale"] is True
    assert [(group["consumer_group_id"], group["stale"]) for group in listed] == [("audit", False), ("billing", False), ("forgotten", True)]


def test_a_group_the_pipeline_has_not_evaluated_answers_404_saying_so(acme: TenantFixture, globex: TenantFixture, lag: datetime) -> None:
    PipelineRun.objects.create(pipeline="lag", trigger="schedule", status=RunStatus.SUCCEEDED, started_at=lag, finished_at=lag)

    unknown = acme.client(Role.VIEWER).get("/api/v1/consumer-groups/fresh-group/lag")
    foreign = globex.client(Role.OWNER).get("/api/v1/consumer-groups/audit/lag")
    nul = acme.client(Role.VIEWER).get("/api/v1/consumer-groups/bad%00id/lag")

    assert unknown.status_code == 404 and foreign.status_code == 404 and nul.status_code == 404
    message = unknown.json()["message"]
    assert message.startswith("The lag evaluator has not evaluated consumer group 'fresh-group' (yet)")
    assert "within seconds of a commit" in message and "/api/v1/consumer-groups/fresh-group/lag-summary" in message
    assert foreign.json()["message"].startswith("The lag evaluator has not evaluated consumer group 'audit'")
    assert "billing" not in foreign.content.decode()


def test_lag_history_is_oldest_first_within_the_window(acme: TenantFixture, lag: datetime) -> None:
    client = acme.client(Role.VIEWER)

    everything = client.get("/api/v1/consumer-groups/billing/lag/history").json()
    recent = client.get("/api/v1/consumer-groups/billing/lag/history", {"from": (lag - timedelta(seconds=90)).isoformat()}).json()
    before = client.get("/api/v1/consumer-groups/billing/lag/history", {"to": (lag - timedelta(hours=1)).isoformat()})
    bad = client.get("/api/v1/consumer-groups/billing/lag/history", {"from": "soon"})

    assert everything["kind"] == "WeirConsumerGroupLagHistory"
    assert [(point["status"], point["total_lag"]) for point in everything["results"]] == [("WARNING", 10), ("WARNING", 20), ("ERROR", 70)]
    assert [point["total_lag"] for point in recent["results"]] == [20, 70]
    assert before.status_code == 200 and before.json()["results"] == []
    assert bad.status_code == 400 and list(bad.json()["errors"]) == ["from"]


def test_lag_history_of_a_group_never_evaluated_or_of_another_tenant_is_404(acme: TenantFixture, globex: TenantFixture, lag: datetime) -> None:
    assert acme.client(Role.VIEWER).get("/api/v1/consumer-groups/nobody/lag/history").status_code == 404
    assert globex.client(Role.OWNER).get("/api/v1/consumer-groups/audit/lag/history").status_code == 404


def test_lag_status_lists_the_tenants_groups_with_counts(acme: TenantFixture, globex: TenantFixture, lag: datetime) -> None:
    client = acme.client(Role.VIEWER)

    body = client.get("/api/v1/consumer-groups:lag-status").json()
    errors_only = client.get("/api/v1/consumer-groups:lag-status", {"status": "ERROR"}).json()
    bad = client.get("/api/v1/consumer-groups:lag-status", {"status": "STALL"})
    theirs = globex.client(Role.OWNER).get("/api/v1/consumer-groups:lag-status").json()

    assert body["kind"] == "WeirConsumerGroupLagStatusList" and body["counts"] == {"OK": 1, "WARNING": 0, "ERROR": 1}
    assert [(group["consumer_group_id"], group["status"], group["total_lag"], group["stale"]) for group in body["results"]] == [
        ("audit", "OK", 0, False),
        ("billing", "ERROR", 70, False),
    ]
    assert body["results"][1]["lag"]["related"].endswith("/api/v1/consumer-groups/billing/lag")
    assert [group["consumer_group_id"] for group in errors_only["results"]] == ["billing"]
    assert bad.status_code == 400 and list(bad.json()["errors"]) == ["status"]
    assert [(group["consumer_group_id"], group["total_lag"]) for group in theirs["results"]] == [("billing", 1)]


def test_lag_status_before_any_evaluation_is_empty(acme: TenantFixture) -> None:
    body = acme.client(Role.VIEWER).get("/api/v1/consumer-groups:lag-status").json()

    assert body["results"] == [] and body["counts"] == {"OK": 0, "WARNING": 0, "ERROR": 0}


def test_the_group_named_like_a_route_still_reaches_the_live_views(acme: TenantFixture, lag: datetime) -> None:
    # "lag-status" is a legal group id: only the custom method has the colon form.
    assert acme.client(Role.VIEWER).get("/api/v1/consumer-groups/lag-status/lag").status_code == 404


@pytest.fixture
def runs() -> list[PipelineRun]:
    now = django_timezone.now()
    return [
        PipelineRun.objects.create(
            pipeline="usage",
            trigger="schedule",
            status=RunStatus.SUCCEEDED,
            started_at=now - timedelta(minutes=60),
            duration=timedelta(seconds=12.5),
            rows_written=40,
            result={"rows": 40},
        ),
        PipelineRun.objects.create(
            pipeline="lag",
            trigger="schedule",
            status=RunStatus.FAILED,
            started_at=now - timedelta(minutes=2),
            error="exited with status 1\nno broker for tn-other~secret-topic",
        ),
        PipelineRun.objects.create(pipeline="lag", trigger="manual", status=RunStatus.RUNNING, started_at=now - timedelta(minutes=1)),
    ]


@pytest.fixture
def operator_client(db: None) -> APIClient:
    operator = get_user_model().objects.create_user(username="operator", password=PASSWORD, is_staff=True)
    client = APIClient()
    client.force_login(operator)
    return client


def test_pipeline_runs_newest_first_and_filtered_for_operators(operator_client: APIClient, runs: list[PipelineRun]) -> None:
    everything = operator_client.get("/api/v1/pipeline-runs").json()["results"]
    lag_runs = operator_client.get("/api/v1/pipeline-runs", {"pipeline": "lag", "status": "FAILED"}).json()["results"]
    single = operator_client.get(f"/api/v1/pipeline-runs/{runs[0].public_id}").json()
    failed = operator_client.get(f"/api/v1/pipeline-runs/{runs[1].public_id}").json()
    bad = operator_client.get("/api/v1/pipeline-runs", {"pipeline": "billing"})

    assert [run["id"] for run in everything] == [runs[2].public_id, runs[1].public_id, runs[0].public_id]
    assert [run["id"] for run in lag_runs] == [runs[1].public_id]
    assert (single["pipeline"], single["status"], single["duration_seconds"], single["rows_written"], single["trigger"]) == (
        "usage",
        "SUCCEEDED",
        12.5,
        40,
        "schedule",
    )
    assert single["result"] == {"rows": 40} and failed["error"].endswith("tn-other~secret-topic")
    assert bad.status_code == 400 and list(bad.json()["errors"]) == ["pipeline"]


def test_members_do_not_read_pipeline_runs_which_hold_every_tenants_figures(acme: TenantFixture, runs: list[PipelineRun]) -> None:
    for role in (Role.OWNER, Role.VIEWER):
        listing = acme.client(role).get("/api/v1/pipeline-runs")
        single = acme.client(role).get(f"/api/v1/pipeline-runs/{runs[1].public_id}")

        assert listing.status_code == 403 and single.status_code == 403, (listing.content, single.content)
        assert "secret-topic" not in single.content.decode() and "rows_written" not in listing.content.decode()


def test_each_tenant_sees_when_its_own_usage_and_lag_were_last_evaluated(acme: TenantFixture, globex: TenantFixture, runs: list[PipelineRun]) -> None:
    evaluated = django_timezone.now().replace(microsecond=0) - timedelta(minutes=5)
    writer.write_usage("hour", [usage_row(acme.tenant.public_id, "orders", this_hour(1), bytes_in=100)])
    write_snapshot(evaluated, [partition_row(globex.tenant.public_id, "billing", "orders", 0)], [group_row(globex.tenant.public_id, "billing")])

    mine = acme.client(Role.VIEWER).get("/api/v1/pipelines")
    theirs = globex.client(Role.VIEWER).get("/api/v1/pipelines")

    assert mine.status_code == 200 and theirs.status_code == 200, (mine.content, theirs.content)
    acme_by_pipeline = {item["pipeline"]: item for item in mine.json()["data"]}
    globex_by_pipeline = {item["pipeline"]: item for item in theirs.json()["data"]}
    assert mine.json()["cluster_id"] == acme.tenant.public_id
    # acme has usage rows and no evaluated group; globex the other way round.
    assert acme_by_pipeline["usage"]["last_evaluated_at"] is not None and acme_by_pipeline["lag"]["last_evaluated_at"] is None
    assert globex_by_pipeline["usage"]["last_evaluated_at"] is None
    assert datetime.fromisoformat(globex_by_pipeline["lag"]["last_evaluated_at"].replace("Z", "+00:00")) == evaluated
    # The runs' status and times are the pipeline's; their figures (rows, errors) are no tenant's to read.
    assert (acme_by_pipeline["lag"]["last_run_status"], acme_by_pipeline["usage"]["last_run_status"]) == ("RUNNING", "SUCCEEDED")
    # Usage runs on its beat schedule; lag is the lag monitor's, evaluated every round (2 s), not every minute.
    assert (acme_by_pipeline["usage"]["interval_seconds"], acme_by_pipeline["lag"]["interval_seconds"]) == (3600, 2)
    for body in (mine.content.decode(), theirs.content.decode()):
        assert "rows_written" not in body and "secret-topic" not in body and "error" not in body
    assert set(acme_by_pipeline["usage"]) == {
        "pipeline",
        "interval_seconds",
        "last_run_started_at",
        "last_run_status",
        "last_succeeded_at",
        "last_evaluated_at",
    }


def test_metering_endpoints_need_a_caller(db: None) -> None:
    anonymous = APIClient()

    for path in (
        "/api/v1/usage",
        "/api/v1/consumer-groups/g/lag",
        "/api/v1/consumer-groups/g/lag/history",
        "/api/v1/consumer-groups:lag-status",
        "/api/v1/pipeline-runs",
        "/api/v1/pipelines",
    ):
        assert anonymous.get(path).status_code == 401, path
