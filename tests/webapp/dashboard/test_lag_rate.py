"""The lag rate on the group pages: a second chart under the lag chart (records/s, signed, with a
zero line and a tooltip per point, or a sentence when no rate is known), and each group's rate
and time to catch up in the groups list. Data is written by the evaluator's writer; the brokers
are the group tests' fake."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.support.fake_group_admin import FakeGroupAdmin
from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_groups import admins, cluster  # noqa: F401  (fixtures)
from tests.webapp.metering.test_writer import group_row, partition_row, write_snapshot
from webapp.dashboard.charts import Series, line_chart, signed_scale, thin
from webapp.dashboard.lag_panels import lag_trend
from webapp.metering.models import GroupLag

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, 10, tzinfo=UTC)


def text(response: Any) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def evaluate(owner: Member, points: list[tuple[int, int, float | None, float | None]]) -> None:
    """Group busy evaluated at each (minutes ago, total lag, lag rate, seconds to catch up)."""
    tenant = owner.tenant.public_id
    now = timezone.now()
    for minutes_ago, lag, rate, catch_up in points:
        row = {**group_row(tenant, "busy", "OK", lag), "lag_rate": rate, "catch_up_seconds": catch_up}
        write_snapshot(now - timedelta(minutes=minutes_ago), [partition_row(tenant, "busy", "orders", 1, lag=lag)], [row])


def rate_chart(page: str) -> str:
    return page[page.index('id="lag-rate-chart"') : page.index("Partitions as evaluated")]


def test_group_page_charts_the_rate_under_the_lag_with_a_zero_line_and_exact_tooltips(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    evaluate(owner, [(3, 100, 40.0, None), (2, 160, 12.5, None), (1, 40, -30.25, 80.0)])

    page = text(owner.client.get(reverse("dashboard:group", args=["busy"])))

    assert page.index("Lag over time (records)") < page.index("Lag rate (records/s)")
    chart = rate_chart(page)
    assert chart.count('class="chart-line"') == 1 and 'class="chart-zero"' in chart
    tooltips = re.findall(r"<title>(.*?)</title>", chart)
    assert len(tooltips) == 3 and "(+ growing, − shrinking): 40 (40)" in tooltips[0] and ": -30.2 (-30.25)" in tooltips[2]
    labels = re.findall(r'text-anchor="end" dominant-baseline="middle">([^<]+)<', chart)
    assert labels[0].startswith("-") and "0" in labels and float(labels[-1]) >= 40


def test_group_page_says_when_no_rate_is_known_yet(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    evaluate(owner, [(2, 100, None, None), (1, 120, None, None)])

    chart = rate_chart(text(owner.client.get(reverse("dashboard:group", args=["busy"]))))

    assert "No lag rate in this window yet" in chart and 'class="chart-line"' not in chart


def test_group_list_shows_each_groups_rate_and_time_to_catch_up(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    evaluate(owner, [(1, 40, -12.5, 200.0)])

    page = text(owner.client.get(reverse("dashboard:groups")))

    busy = page[page.index("/groups/busy/") : page.index("/groups/idle/")]
    idle = page[page.index("/groups/idle/") :].split("</tr>")[0]
    assert '<th class="number">Lag rate</th>' in page and '<th class="number">Catch up</th>' in page
    assert 'title="lag shrinking by -12.50 records/s">−12.5/s<' in busy and 'title="200 s at the current rate">3 min<' in busy
    assert idle.count(">—<") == 2


def test_lag_trend_words_each_case() -> None:
    def lag(total: int, rate: float | None, catch_up: float | None) -> GroupLag:
        return GroupLag(total_lag=total, lag_rate=rate, catch_up_seconds=catch_up)

    assert lag_trend(None).rate == "—"
    assert (lag_trend(lag(500, 2500.0, None)).rate, lag_trend(lag(500, 2500.0, None)).catch_up) == ("+2.5k/s", "not catching up")
    assert lag_trend(lag(500, 2500.0, None)).direction == "growing"
    assert (lag_trend(lag(0, 0.0, 0.0)).rate, lag_trend(lag(0, 0.0, 0.0)).direction, lag_trend(lag(0, 0.0, 0.0)).catch_up) == ("0/s", "steady", "—")
    assert lag_trend(lag(10, None, None)).rate == "—"


@pytest.mark.parametrize(
    ("lowest", "highest", "expected"),
    [(-30.25, 40.0, (20.0, -40.0, 40.0)), (-7.0, 0.0, (2.0, -8.0, 0.0)), (0.0, 9.0, (2.5, 0.0, 10.0)), (0.0, 0.0, (1.0, -1.0, 1.0))],
)
def test_signed_scale_holds_both_ends_in_round_steps_through_zero(lowest: float, highest: float, expected: tuple[float, float, float]) -> None:
    assert signed_scale(lowest, highest, 4) == pytest.approx(expected)


def test_a_signed_chart_puts_zero_between_its_lowest_and_highest_ticks() -> None:
    chart = line_chart("rate", [Series("rate", [(T0, -5.0), (T0 + timedelta(minutes=1), 15.0)])], T0, T0 + timedelta(minutes=2), str, signed=True)
    unsigned = line_chart("lag", [Series("lag", [(T0, 5.0)])], T0, T0 + timedelta(minutes=2), str)

    positions = [tick.position for tick in chart.y_ticks]
    assert chart.zero_y is not None and min(positions) < chart.zero_y < max(positions)
    assert unsigned.zero_y is None


def test_thinning_keeps_troughs_as_well_as_peaks() -> None:
    points = [(T0 + timedelta(minutes=i), value) for i, value in enumerate([1.0, -9.0, 2.0, 3.0, None, None])]

    assert [value for _, value in thin(points, limit=3)] == [-9.0, 3.0, None]
