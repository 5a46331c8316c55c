"""The lag pipeline's view of consumer groups on the group pages: a group's status, its
partitions' statuses and its lag over time (a chart with the status as a band), and the
status column of the groups list.

The group pages otherwise show the live lag asked from the brokers; this part reads only
the database (``webapp.metering.facade``), so it is shown even when the brokers cannot be
reached.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from webapp.accounts.facade import Tenant
from webapp.dashboard.charts import Series, format_count, line_chart, status_bands
from webapp.metering import facade
from webapp.metering.facade import GroupLag

# The windows of the lag-over-time chart (``?lag_window=``) and the default.
LAG_WINDOWS = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
DEFAULT_LAG_WINDOW = "6h"
# A status band lasts until the next evaluation, at most this many intervals (a longer gap
# means the pipeline did not run, and is left blank).
BAND_INTERVALS = 2.5


def group_lag_panel(tenant: Tenant, group_id: str, window: str | None, now: datetime) -> dict[str, Any]:
    """Template values of the group page's pipeline part: ``lag_evaluation`` (None before the
    pipeline evaluated the group), ``lag_chart``, ``lag_window``, ``lag_windows`` and
    ``lag_interval_seconds``."""
    window = window if window in LAG_WINDOWS else DEFAULT_LAG_WINDOW
    evaluation = facade.group_evaluation(tenant, group_id, now)
    values: dict[str, Any] = {
        "lag_evaluation": evaluation,
        "lag_window": window,
        "lag_windows": list(LAG_WINDOWS),
        "lag_chart": None,
        "lag_interval_seconds": facade.lag_interval_seconds(),
    }
    if evaluation is None:
        return values
    start = now - LAG_WINDOWS[window]
    history = list(facade.lag_history(tenant, group_id, start, now).values_list("evaluated_at", "status", "total_lag", "max_lag"))
    interval = timedelta(seconds=facade.lag_interval_seconds() * BAND_INTERVALS)
    values["lag_chart"] = line_chart(
        "Lag over time (records)",
        [
            Series("total lag", [(when, float(total)) for when, _, total, _ in history]),
            Series("max lag of a partition", [(when, float(most)) for when, _, _, most in history]),
        ],
        start,
        now,
        format_count,
        bands=status_bands([(when, status) for when, status, _, _ in history], now, interval),
    )
    return values


def group_statuses(tenant: Tenant) -> dict[str, GroupLag]:
    """The lag pipeline's latest evaluation of each of the tenant's groups, by group id (one query)."""
    return {row.group: row for row in facade.group_statuses(tenant)}
