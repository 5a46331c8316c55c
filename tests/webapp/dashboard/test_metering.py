"""Dashboard pages of metering: usage charts and table, pipeline runs, and the lag
pipeline's status on the consumer group pages (badges, lag-over-time chart), rendered with
data written by the pipelines' writer."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.support.fake_group_admin import FakeGroupAdmin
from tests.support.processes import free_port
from tests.webapp.api.test_metering import this_hour
from tests.webapp.dashboard.conftest import PASSWORD, Member
from tests.webapp.dashboard.test_groups import admins, cluster  # noqa: F401  (fixtures)
from tests.webapp.metering.test_writer import group_row, partition_row, usage_row, write_snapshot
from webapp.accounts.models import Role
from webapp.metering import writer
from webapp.metering.models import PipelineRun, RunStatus

pytestmark = pytest.mark.django_db


def text(response) -> str:  # type: ignore[no-untyped-def]
    return re.sub(r"\s+", " ", response.content.decode())


@pytest.fixture
def usage(owner: Member, other_owner: Member) -> None:
    tenant = owner.tenant.public_id
    rows = [usage_row(tenant, topic, this_hour(hours), bytes_in=1024 * (hours + 1), bytes_out=2048) for topic in ("orders", "payments") for hours in (1, 2, 3)]
    writer.write_usage("hour", [*rows, usage_row(other_owner.tenant.public_id, "globex-secret", this_hour(1))])
    writer.write_usage("day", [usage_row(tenant, "orders", this_hour(0).replace(hour=0) - timedelta(days=2))])


def test_nav_links_to_usage_and_pipeline_runs(owner: Member) -> None:
    page = owner.client.get(reverse("dashboard:overview")).content.decode()

    assert f'href="{reverse("dashboard:usage")}"' in page and f'href="{reverse("dashboard:pipelines")}"' in page


def test_usage_page_charts_the_tenant_and_its_topics_with_a_table(roles: dict[str, Member], usage: None) -> None:
    response = roles[Role.VIEWER].client.get(reverse("dashboard:usage"))
    page = text(response)

    assert response.status_code == 200
    assert page.count('<svg class="chart-svg"') == 6  # bytes, records, storage; bytes in, out, storage by topic
    assert "All topics: bytes" in page and "Bytes in by topic" in page
    assert page.count('class="chart-line"') >= 6
    table = page[page.index('id="usage-topics"') :]
    assert "<td>orders</td>" in table and "<td>payments</td>" in table and "6.0 KB" in table
    assert "globex-secret" not in page
    assert 'href="/api/v1/usage?granularity=hour&amp;from=' in page and "format=csv" in page


def test_usage_page_for_one_topic_per_day(owner: Member, usage: None) -> None:
    page = text(owner.client.get(reverse("dashboard:usage"), {"granularity": "day", "window": "30d", "topic": "orders"}))

    assert "Topic orders" in page and "orders: storage" in page
    assert "Bytes in by topic" not in page
    assert page.count('<svg class="chart-svg"') == 3
    assert "topic=orders" in page and "granularity=day" in page


def test_usage_page_without_usage_says_so(owner: Member) -> None:
    page = text(owner.client.get(reverse("dashboard:usage"), {"granularity": "bogus", "window": "1y", "topic": "nope"}))

    assert 'id="usage-empty"' in page and "No usage in this window" in page
    assert "The usage pipeline has not completed a run yet." in page


def test_usage_csv_link_downloads_with_the_session(owner: Member, usage: None) -> None:
    page = owner.client.get(reverse("dashboard:usage")).content.decode()
    link = re.search(r'href="(/api/v1/usage\?[^"]+)" id="usage-csv"', page)
    assert link is not None

    response = owner.client.get(link.group(1).replace("&amp;", "&"))

    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert len(b"".join(response.streaming_content).decode().splitlines()) == 1 + 6


@pytest.fixture
def runs() -> None:
    now = timezone.now()
    PipelineRun.objects.create(
        pipeline="usage",
        trigger="schedule",
        status=RunStatus.SUCCEEDED,
        started_at=now - timedelta(minutes=30),
        finished_at=now - timedelta(minutes=29),
        duration=timedelta(seconds=42),
        rows_written=1234,
    )
    PipelineRun.objects.create(
        pipeline="lag",
        trigger="manual",
        status=RunStatus.FAILED,
        started_at=now - timedelta(minutes=1),
        finished_at=now,
        duration=timedelta(seconds=3),
        error="exited with status 1\nSpark said tn-zzz~hidden",
    )


def test_pipelines_page_shows_a_member_its_own_evaluation_times_and_no_run_figures(owner: Member, other_owner: Member, runs: None) -> None:
    writer.write_usage("hour", [usage_row(owner.tenant.public_id, "orders", this_hour(1), bytes_in=100)])

    mine = text(owner.client.get(reverse("dashboard:pipelines")))
    theirs = text(other_owner.client.get(reverse("dashboard:pipelines")))

    for page in (mine, theirs):
        assert 'id="tenant-pipelines"' in page and 'id="pipeline-runs"' not in page
        assert "1234" not in page and "42.0 s" not in page and "tn-zzz" not in page
        assert '<span class="badge FAILED">FAILED</span>' in page  # the lag pipeline's latest run, status only
    usage_row_of = lambda page: page.split('id="tenant-pipelines"')[1].split("<tr>")[2]  # noqa: E731
    assert "ago" in usage_row_of(mine).split("</td>")[1] and "not yet" in usage_row_of(theirs).split("</td>")[1]


def test_pipelines_page_shows_operators_every_run_filtered_with_errors(owner: Member, runs: None) -> None:
    operator = get_user_model().objects.create_user(username="ops", password=PASSWORD, is_staff=True)
    client = Client()
    client.force_login(operator)

    page = text(client.get(reverse("dashboard:pipelines"), {"pipeline": "lag"}))

    assert "Spark said tn-zzz~hidden" in page
    assert "SUCCEEDED</span>" not in page.split('id="pipeline-runs"')[1]
    everything = text(client.get(reverse("dashboard:pipelines")))
    assert "1234" in everything and "42.0 s" in everything and "last succeeded 29" in everything


@pytest.fixture
def evaluated(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    """The lag pipeline evaluated group busy three times (OK, WARNING, then ERROR) in the last minutes."""
    tenant = owner.tenant.public_id
    now = timezone.now()
    for minutes_ago, status, lag in ((3, "OK", 2), (2, "WARNING", 9), (1, "ERROR", 30)):
        partition = partition_row(tenant, "busy", "orders", 1, lag=lag, status="STALL" if status == "ERROR" else status)
        write_snapshot(
            now - timedelta(minutes=minutes_ago),
            [partition],
            [
                {
                    **group_row(tenant, "busy", status, lag),
                    "retention_risk": status == "ERROR",
                    "retention_status": "AT_RISK" if status == "ERROR" else "OK",
                    "retention_seconds": 120.0,
                    "lag_rate": 3.0,
                }
            ],
        )


def test_group_list_shows_the_lag_pipelines_status(owner: Member, evaluated: None) -> None:
    page = text(owner.client.get(reverse("dashboard:groups")))

    busy_row = page[page.index("/groups/busy/") : page.index("/groups/idle/")]
    idle_row = page[page.index("/groups/idle/") :]
    assert '<span class="badge ERROR"' in busy_row
    assert "not evaluated" in idle_row.split("</tr>")[0]
    assert "<th>Lag status</th>" in page


def test_group_detail_shows_the_status_and_the_lag_over_time(roles: dict[str, Member], evaluated: None) -> None:
    page = text(roles[Role.VIEWER].client.get(reverse("dashboard:group", args=["busy"])))

    panel = page[page.index('id="lag-status"') : page.index("<h2>Members</h2>")]
    assert '<span class="badge ERROR">ERROR</span>' in panel and "30 records" in panel and "at risk" in panel
    assert "growing 3.0 records/s; not catching up" in panel and "deleted in 120 s, before the group catches up" in panel
    assert "Lag over time (records)" in panel and 'class="chart-line"' in panel
    assert [band for band in re.findall(r'class="chart-band (\w+)"', panel)] == ["OK", "WARNING", "ERROR"]
    assert '<span class="badge STALL">STALL</span>' in panel
    # The live lag from the brokers is still there below.
    assert 'id="lag"' in page


def test_group_detail_says_when_the_pipeline_has_not_evaluated_the_group(owner: Member, evaluated: None) -> None:
    page = text(owner.client.get(reverse("dashboard:group", args=["idle"]), {"lag_window": "7d"}))

    assert 'id="lag-not-evaluated"' in page and "has not evaluated this group yet" in page


def test_group_detail_keeps_the_pipelines_view_when_no_broker_answers(owner: Member, evaluated: None, settings, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from webapp import consumer_groups
    from webapp.tenant_clients import admin_client

    # The real client instead of the fake, against a port nothing listens on.
    monkeypatch.setattr(consumer_groups, "admin_client", admin_client)
    settings.WEIR_BOOTSTRAP_SERVERS = f"127.0.0.1:{free_port()}"

    response = owner.client.get(reverse("dashboard:group", args=["busy"]))

    assert response.status_code == 503
    assert '<span class="badge ERROR">ERROR</span>' in text(response)


def test_another_tenants_evaluation_is_never_shown(other_owner: Member, evaluated: None, admins: dict[str, FakeGroupAdmin]) -> None:  # noqa: F811
    fake = admins.setdefault(other_owner.tenant.public_id, FakeGroupAdmin())
    fake.add_topic("orders", [1])
    fake.add_group("busy", {("orders", 0): 1})

    page = text(other_owner.client.get(reverse("dashboard:group", args=["busy"])))

    assert 'id="lag-not-evaluated"' in page and "badge ERROR" not in page
