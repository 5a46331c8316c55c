"""The lag evaluator's view of consumer groups on the group pages: a group's status, its
partitions' statuses with lag rate, time to catch up and retention clock, its lag over time (a
chart with the status as a band) and the rate at which it grew or shrank (a second chart,
signed, with a zero line), and the status and rate columns of the groups list.

The group pages otherwise show the live lag asked from the brokers; this part reads only
the database (``webapp.metering.facade``), so it is shown even when the brokers cannot be
reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from webapp.accounts.facade import Tenant
from webapp.dashboard.charts import Series, format_count, format_seconds, line_chart, status_bands
from webapp.metering import facade
from webapp.metering.facade import GroupLag

# The windows of the lag-over-time chart (``?lag_window=``) and the default.
LAG_WINDOWS = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
DEFAULT_LAG_WINDOW = "6h"
# A status band lasts until the next history point, at most this many intervals (a longer gap
# means the evaluator did not run, and is left blank).
BAND_INTERVALS = 2.5
# The rate chart is empty until the evaluator kept a point with a rate in the window: a
# partition's rate needs a few evaluations of its lag.
RATE_EMPTY_MESSAGE = (
    "No lag rate in this window yet: the lag evaluator measures how fast the lag grows or shrinks once it has seen a partition's lag a few times."
)


def group_lag_panel(tenant: Tenant, group_id: str, window: str | None, now: datetime) -> dict[str, Any]:
    """Template values of the group page's lag part: ``lag_evaluation`` (None before the
    evaluator evaluated the group), ``lag_chart``, ``lag_rate_chart``, ``lag_window``, ``lag_windows`` and
    ``lag_interval_seconds``."""
    window = window if window in LAG_WINDOWS else DEFAULT_LAG_WINDOW
    evaluation = facade.group_evaluation(tenant, group_id, now)
    values: dict[str, Any] = {
        "lag_evaluation": evaluation,
        "lag_window": window,
        "lag_windows": list(LAG_WINDOWS),
        "lag_chart": None,
        "lag_rate_chart": None,
        "lag_interval_seconds": facade.lag_interval_seconds(),
    }
    if evaluation is None:
        return values
    start = now - LAG_WINDOWS[window]
    history = list(facade.lag_history(tenant, group_id, start, now).values_list("evaluated_at", "status", "total_lag", "max_lag", "lag_rate"))
    interval = timedelta(seconds=facade.lag_interval_seconds() * BAND_INTERVALS)
    values["lag_chart"] = line_chart(
        "Lag over time (records)",
        [
            Series("total lag", [(when, float(total)) for when, _, total, _, _ in history]),
            Series("max lag of a partition", [(when, float(most)) for when, _, _, most, _ in history]),
        ],
        start,
        now,
        format_count,
        bands=status_bands([(when, status) for when, status, _, _, _ in history], now, interval),
    )
    values["lag_rate_chart"] = line_chart(
        "Lag rate (records/s)",
        [Series("lag rate (+ growing, − shrinking)", [(when, rate) for when, _, _, _, rate in history])],
        start,
        now,
        format_count,
        empty_message=RATE_EMPTY_MESSAGE,
        signed=True,
    )
    return values


def group_statuses(tenant: Tenant) -> dict[str, GroupLag]:
    """The lag evaluator's latest evaluation of each of the tenant's groups, by group id (one query)."""
    return {row.group: row for row in facade.group_statuses(tenant)}


@dataclass(frozen=True)
class LagTrend:
    """A group's lag rate and time to catch up as the groups list shows them."""

    rate: str  # "+12.5/s" growing, "−3/s" shrinking, "0/s" steady, "—" unknown
    direction: str  # "growing", "shrinking", "steady" or "" (unknown): the rate's tooltip
    catch_up: str  # "4 min", "not catching up" (lagging, no end in sight) or "—" (no lag, or unknown)


def lag_trend(lag: GroupLag | None) -> LagTrend:
    """How ``lag`` (the evaluator's latest evaluation of a group, None before the first) grows
    or shrinks, and how long the group takes to catch up at that rate."""
    if lag is None:
        return LagTrend(rate="—", direction="", catch_up="—")
    if lag.lag_rate is None:
        rate, direction = "—", ""
    else:
        direction = "growing" if lag.lag_rate > 0 else "shrinking" if lag.lag_rate < 0 else "steady"
        sign = "+" if lag.lag_rate > 0 else "−" if lag.lag_rate < 0 else ""
        rate = f"{sign}{format_count(abs(lag.lag_rate))}/s"
    if lag.total_lag <= 0:
        catch_up = "—"
    elif lag.catch_up_seconds is None:
        catch_up = "not catching up"
    else:
        catch_up = format_seconds(lag.catch_up_seconds)
    return LagTrend(rate=rate, direction=direction, catch_up=catch_up)
