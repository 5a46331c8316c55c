"""The tenant's usage: charts of the tenant's total (or one topic's) and of its biggest
topics over a window, a table per topic below, and the CSV export (the REST API's
``/api/v1/usage?format=csv``, which the signed-in session may call).

Everything comes from the usage pipeline's aggregates (``webapp.metering.facade``); the
page says when the pipeline last ran, since an hour that has not been aggregated yet is
simply absent.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from webapp.dashboard.charts import LineChart, Series, format_bytes, format_count, line_chart
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.metering import facade
from webapp.metering.facade import Granularity, Pipeline

SECTION = "usage"
# The windows a page may show, and each granularity's default.
WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90)}
DEFAULT_WINDOW = {Granularity.HOUR: "24h", Granularity.DAY: "30d"}
# Topics drawn in the per-topic charts: the biggest by bytes in and out.
TOPICS_CHARTED = 6


@tenant_page()
def usage_page(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    granularity = _choice(request.GET.get("granularity"), Granularity.values, Granularity.HOUR)
    window = _choice(request.GET.get("window"), list(WINDOWS), DEFAULT_WINDOW[Granularity(granularity)])
    topics = facade.usage_topics(tenant)
    topic = _choice(request.GET.get("topic"), topics, "")
    end = timezone.now()
    start = bucket_floor(end - WINDOWS[window], granularity)

    totals = facade.usage_totals_by_bucket(tenant, granularity, start, end, topic or None)
    per_topic = facade.usage_totals_by_topic(tenant, granularity, start, end, topic or None)
    whole = topic or "All topics"
    charts = [
        line_chart(f"{whole}: bytes", [_series("in", totals, "bytes_in"), _series("out", totals, "bytes_out")], start, end, format_bytes, binary=True),
        line_chart(f"{whole}: records", [_series("in", totals, "records_in"), _series("out", totals, "records_out")], start, end, format_count),
        line_chart(
            f"{whole}: storage",
            [_series("average", totals, "storage_bytes_avg"), _series("peak", totals, "storage_bytes_peak")],
            start,
            end,
            format_bytes,
            binary=True,
        ),
    ]
    topic_charts = [] if topic else _topic_charts(tenant, granularity, start, end, [row["topic"] for row in per_topic[:TOPICS_CHARTED]])
    export = {"granularity": granularity, "from": start.isoformat(), "to": end.isoformat(), "format": "csv", **({"topic": topic} if topic else {})}
    context = page_context(
        request,
        SECTION,
        granularity=granularity,
        granularities=Granularity.values,
        window=window,
        windows=list(WINDOWS),
        topic=topic,
        topics=topics,
        start=start,
        end=end,
        charts=charts,
        topic_charts=topic_charts,
        per_topic=per_topic,
        csv_url=f"{reverse('api:usage')}?{urlencode(export)}",
        last_run=facade.last_succeeded_run(Pipeline.USAGE),
    )
    return render(request, "dashboard/usage/page.html", context)


def bucket_floor(when: datetime, granularity: str) -> datetime:
    """The start of the hour or UTC day holding ``when``."""
    floor = when.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return floor.replace(hour=0) if granularity == Granularity.DAY else floor


def _topic_charts(tenant: Any, granularity: str, start: datetime, end: datetime, topics: list[str]) -> list[LineChart]:
    if not topics:
        return []
    rows = facade.usage(tenant, granularity, start, end).filter(topic__in=topics).values("topic", "bucket_start", "bytes_in", "bytes_out", "storage_bytes_avg")
    by_topic: dict[str, list[dict[str, Any]]] = {name: [] for name in topics}
    for row in rows:
        by_topic[row["topic"]].append(row)
    return [
        line_chart(title, [_series(name, by_topic[name], field) for name in topics], start, end, format_bytes, binary=True)
        for title, field in (("Bytes in by topic", "bytes_in"), ("Bytes out by topic", "bytes_out"), ("Storage by topic (average)", "storage_bytes_avg"))
    ]


def _series(name: str, rows: list[dict[str, Any]], field: str) -> Series:
    return Series(name=name, points=[(row["bucket_start"], float(row[field] or 0)) for row in rows])


def _choice(value: str | None, choices: list[str], default: str) -> str:
    return value if value in choices else default
