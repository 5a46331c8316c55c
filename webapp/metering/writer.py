"""The one narrow writer of webapp that the Spark pipelines may import.

Importing this module needs no Django: every function calls :func:`ensure_django` first,
which sets Django up (``DJANGO_SETTINGS_MODULE``, else ``webapp.settings``) when a job
process has not. All timestamps are timezone-aware; they are stored in UTC.

Writes are bulk upserts (``INSERT ... ON CONFLICT DO UPDATE``, which PostgreSQL and SQLite
both run) inside one transaction per call, so that writing the same rows twice leaves the
same state: a job that failed after writing may simply run again.

Rows name tenants by their public id (``tn-…``, as brokers know them: the prefix of a
qualified name ``tn-…~orders``). Rows of an unknown or empty tenant (a tenant deleted since,
a standalone broker's topics, internal topics) are skipped and counted in one log line.
A row missing a key or with a value of the wrong kind raises :class:`InvalidRow` and writes
nothing: it is a bug in the job, not data to drop.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from log_formats.lag_statuses import GROUP_STATUSES, PARTITION_STATUSES
from webapp.metering.figures import USAGE_COUNTERS

logger = logging.getLogger(__name__)

GRANULARITIES = ("hour", "day")
# Rows per INSERT statement: well below SQLite's limit of variables per statement.
BATCH_SIZE = 500
# Must match the models' limits (webapp.metering.models); repeated here so that importing
# this module needs no Django.
TOPIC_NAME_MAX_LENGTH = 249
GROUP_ID_MAX_LENGTH = 255


class InvalidRow(ValueError):
    """A row the job handed over is malformed; ``index`` is its position in its iterable."""

    def __init__(self, what: str, index: int, problem: str) -> None:
        super().__init__(f"{what} row {index}: {problem}")
        self.what = what
        self.index = index
        self.problem = problem


def ensure_django() -> None:
    """Set Django up unless it already is (a job process calls the writer directly)."""
    from django.apps import apps

    if apps.ready:
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()


def write_usage(granularity: str, rows: Iterable[Mapping[str, Any]]) -> int:
    """Upsert usage aggregates by (tenant, topic, granularity, bucket_start); returns the
    rows written. ``bucket_start`` must be the start of an hour (``"hour"``) or of a UTC day
    (``"day"``). When one call repeats a key, the last row wins."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, not {granularity!r}")
    ensure_django()
    from django.db import transaction
    from django.utils import timezone as django_timezone

    from webapp.metering.models import UsageAggregate

    rows = list(rows)
    tenants = _tenant_pks(row.get("tenant_id") for row in rows)
    skipped: Counter[str] = Counter()
    aggregates: dict[tuple[int, str, datetime], UsageAggregate] = {}
    now = django_timezone.now()
    for index, row in enumerate(rows):
        tenant_pk = tenants.get(row.get("tenant_id") or "")
        if tenant_pk is None:
            skipped[row.get("tenant_id") or "(none)"] += 1
            continue
        topic = _name(row, "topic", TOPIC_NAME_MAX_LENGTH, "usage", index)
        bucket_start = _bucket_start(row, granularity, index)
        values = {name: _integer(row, name, "usage", index) for name in USAGE_COUNTERS}
        partition_hours = _number(row, "partition_hours", "usage", index)
        aggregates[(tenant_pk, topic, bucket_start)] = UsageAggregate(
            tenant_id=tenant_pk, topic=topic, granularity=granularity, bucket_start=bucket_start, partition_hours=partition_hours, updated_at=now, **values
        )
    with transaction.atomic():
        UsageAggregate.objects.bulk_create(
            list(aggregates.values()),
            batch_size=BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["tenant", "granularity", "topic", "bucket_start"],
            update_fields=[*USAGE_COUNTERS, "partition_hours", "updated_at"],
        )
    _log_skipped("write_usage", skipped, len(rows))
    return len(aggregates)


PARTITION_LAG_FIELDS = (
    "committed_offset",
    "end_offset",
    "log_start_offset",
    "offset_lag",
    "time_lag_seconds",
    "status",
    "retention_risk",
    "lag_rate",
    "catch_up_seconds",
    "retention_seconds",
    "retention_status",
    "last_commit_at",
    "evaluated_at",
)
GROUP_LAG_FIELDS = (
    "status",
    "max_lag",
    "total_lag",
    "max_time_lag_seconds",
    "partition_count",
    "retention_risk",
    "worst_topic",
    "worst_partition",
    "worst_status",
    "lag_rate",
    "catch_up_seconds",
    "retention_seconds",
    "retention_status",
    "evaluated_at",
)
RETENTION_STATUSES = ("OK", "AT_RISK", "LOST")
LAG_MONITOR_STATE = "lag-monitor"


def write_lag_changes(
    evaluated_at: datetime,
    partitions: Iterable[Mapping[str, Any]],
    groups: Iterable[Mapping[str, Any]],
    *,
    removed_partitions: Iterable[tuple[str, str, str, int]] = (),
    removed_groups: Iterable[tuple[str, str]] = (),
    history: Iterable[Mapping[str, Any]] = (),
) -> int:
    """Upsert the partition and group rows that changed (by (tenant, group, topic, partition) and
    (tenant, group)), delete the removed ones (keys by tenant public id), append ``history``
    (group rows) to the lag-over-time series, in one transaction. Returns the rows upserted.
    Nothing else is touched: unchanged groups keep their rows (see :func:`touch_lag`)."""
    evaluated_at = _aware(evaluated_at, "evaluated_at")
    ensure_django()
    from django.db import transaction

    from webapp.metering.models import GroupLag, GroupLagHistory, PartitionLag

    partitions = list(partitions)
    groups = list(groups)
    history = list(history)
    removed_partitions = list(removed_partitions)
    removed_groups = list(removed_groups)
    tenants = _tenant_pks(
        [row.get("tenant_id") for row in [*partitions, *groups, *history]] + [key[0] for key in removed_partitions] + [key[0] for key in removed_groups]
    )
    skipped: Counter[str] = Counter()
    group_rows = _keyed_rows(groups, tenants, skipped, lambda row, pk, index: _group_lag(row, pk, evaluated_at, index), lambda lag: (lag.tenant_id, lag.group))
    partition_rows = _keyed_rows(
        partitions,
        tenants,
        skipped,
        lambda row, pk, index: _partition_lag(row, pk, evaluated_at, index),
        lambda lag: (lag.tenant_id, lag.group, lag.topic, lag.partition),
    )
    history_rows = [
        GroupLagHistory(
            tenant_id=group.tenant_id,
            group=group.group,
            evaluated_at=evaluated_at,
            status=group.status,
            total_lag=group.total_lag,
            max_lag=group.max_lag,
            max_time_lag_seconds=group.max_time_lag_seconds,
            lag_rate=group.lag_rate,
        )
        for group in _keyed_rows(
            history, tenants, Counter(), lambda row, pk, index: _group_lag(row, pk, evaluated_at, index), lambda lag: (lag.tenant_id, lag.group)
        ).values()
    ]
    with transaction.atomic():
        PartitionLag.objects.bulk_create(
            list(partition_rows.values()),
            batch_size=BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["tenant", "group", "topic", "partition"],
            update_fields=list(PARTITION_LAG_FIELDS),
        )
        GroupLag.objects.bulk_create(
            list(group_rows.values()), batch_size=BATCH_SIZE, update_conflicts=True, unique_fields=["tenant", "group"], update_fields=list(GROUP_LAG_FIELDS)
        )
        for tenant_public_id, group, topic, partition in removed_partitions:
            if tenant_public_id in tenants:
                PartitionLag.objects.filter(tenant_id=tenants[tenant_public_id], group=group, topic=topic, partition=partition).delete()
        for tenant_public_id, group in removed_groups:
            if tenant_public_id in tenants:
                GroupLag.objects.filter(tenant_id=tenants[tenant_public_id], group=group).delete()
        GroupLagHistory.objects.bulk_create(history_rows, batch_size=BATCH_SIZE)
    _log_skipped("write_lag_changes", skipped, len(partitions) + len(groups))
    return len(partition_rows) + len(group_rows)


def touch_lag(evaluated_at: datetime) -> int:
    """Mark every current lag row as evaluated at ``evaluated_at`` (the evaluator holds them all and
    re-evaluated them; their values did not change), and drop history older than kept. One
    UPDATE per table; returns the group rows touched."""
    evaluated_at = _aware(evaluated_at, "evaluated_at")
    ensure_django()
    from django.db import transaction

    from webapp.metering.models import GroupLag, PartitionLag

    with transaction.atomic():
        PartitionLag.objects.update(evaluated_at=evaluated_at)
        touched = GroupLag.objects.update(evaluated_at=evaluated_at)
        _prune(evaluated_at)
    return int(touched)


def close_broken_connections() -> None:
    """Close database connections that broke or outlived ``CONN_MAX_AGE``, as Django does around
    each request: a long-running writer (the lag evaluator) calls it every round, so that a
    database restart costs one failed round, not every round after it."""
    ensure_django()
    from django.db import close_old_connections

    close_old_connections()


def load_lag_monitor_state() -> tuple[dict[str, Any], list[tuple[tuple[str, str, str, int], dict[str, Any]]]]:
    """(the evaluator's cursor document, every saved window as ((tenant, group, topic, partition), window))."""
    ensure_django()
    from webapp.metering.models import LagWindow

    windows = [
        ((tenant, group, topic, partition), dict(window))
        for tenant, group, topic, partition, window in LagWindow.objects.order_by("pk").values_list("tenant_public_id", "group", "topic", "partition", "window")
    ]
    return load_state(LAG_MONITOR_STATE), windows


def save_lag_monitor_state(
    document: dict[str, Any], changed: Mapping[tuple[str, str, str, int], Mapping[str, Any]], removed: Iterable[tuple[str, str, str, int]]
) -> None:
    """Save the evaluator's cursor document with the windows that changed (upserts) and without
    those forgotten, in one transaction: a restart resumes from a cursor that matches its windows."""
    if not isinstance(document, dict):
        raise TypeError(f"the lag monitor's state is a dict, not {type(document).__name__}")
    ensure_django()
    from django.db import transaction

    from webapp.metering.models import LagWindow, PipelineState

    rows = [
        LagWindow(tenant_public_id=tenant, group=group, topic=topic, partition=partition, window=dict(window))
        for (tenant, group, topic, partition), window in changed.items()
    ]
    with transaction.atomic():
        LagWindow.objects.bulk_create(
            rows,
            batch_size=BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["tenant_public_id", "group", "topic", "partition"],
            update_fields=["window", "updated_at"],
        )
        for tenant, group, topic, partition in removed:
            LagWindow.objects.filter(tenant_public_id=tenant, group=group, topic=topic, partition=partition).delete()
        PipelineState.objects.update_or_create(pipeline=LAG_MONITOR_STATE, defaults={"state": document})


def _keyed_rows(rows: list[Mapping[str, Any]], tenants: Mapping[str, int], skipped: Counter[str], build: Any, key: Any) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    for index, row in enumerate(rows):
        tenant_pk = tenants.get(row.get("tenant_id") or "")
        if tenant_pk is None:
            skipped[row.get("tenant_id") or "(none)"] += 1
            continue
        built = build(row, tenant_pk, index)
        result[key(built)] = built
    return result


def load_state(pipeline: str) -> dict[str, Any]:
    """The state :func:`save_state` last saved for ``pipeline``; ``{}`` before the first save."""
    ensure_django()
    from webapp.metering.models import PipelineState

    state = PipelineState.objects.filter(pipeline=pipeline).values_list("state", flat=True).first()
    return dict(state) if isinstance(state, dict) else {}


def save_state(pipeline: str, state: dict[str, Any]) -> None:
    """Replace ``pipeline``'s state with ``state`` (a JSON-serialisable mapping)."""
    if not isinstance(state, dict):
        raise TypeError(f"a pipeline's state is a dict, not {type(state).__name__}")
    ensure_django()
    from webapp.metering.models import PipelineState

    PipelineState.objects.update_or_create(pipeline=pipeline, defaults={"state": state})


def history_days() -> float:
    from django.conf import settings

    return float(getattr(settings, "WEIR_METERING_HISTORY_DAYS", 7))


def _tenant_pks(public_ids: Iterable[Any]) -> dict[str, int]:
    from webapp.accounts.facade import Tenant

    wanted = {public_id for public_id in public_ids if isinstance(public_id, str) and public_id}
    if not wanted:
        return {}
    return dict(Tenant.objects.filter(public_id__in=wanted).values_list("public_id", "pk"))


def _group_lag(row: Mapping[str, Any], tenant_pk: int, evaluated_at: datetime, index: int) -> Any:
    from webapp.metering.models import GroupLag

    worst = row.get("worst_partition") or {}
    if not isinstance(worst, Mapping):
        raise InvalidRow("group", index, "worst_partition must be a mapping with topic, partition and status")
    worst_status = worst.get("status") or ""
    if worst_status and worst_status not in PARTITION_STATUSES:
        raise InvalidRow("group", index, f"worst_partition status must be one of {', '.join(PARTITION_STATUSES)}, not {worst_status!r}")
    return GroupLag(
        tenant_id=tenant_pk,
        group=_name(row, "group", GROUP_ID_MAX_LENGTH, "group", index),
        status=_choice(row, "status", GROUP_STATUSES, "group", index),
        max_lag=_integer(row, "max_lag", "group", index),
        total_lag=_integer(row, "total_lag", "group", index),
        max_time_lag_seconds=_optional_number(row, "max_time_lag_seconds", "group", index),
        partition_count=_integer(row, "partition_count", "group", index),
        retention_risk=bool(row.get("retention_risk", False)),
        worst_topic=str(worst.get("topic") or "")[:TOPIC_NAME_MAX_LENGTH],
        worst_partition=int(worst["partition"]) if worst.get("partition") is not None else None,
        worst_status=worst_status,
        **_trend_fields(row, "group", index),
        evaluated_at=evaluated_at,
    )


def _partition_lag(row: Mapping[str, Any], tenant_pk: int, evaluated_at: datetime, index: int) -> Any:
    from webapp.metering.models import PartitionLag

    last_commit_at = row.get("last_commit_at")
    return PartitionLag(
        tenant_id=tenant_pk,
        group=_name(row, "group", GROUP_ID_MAX_LENGTH, "partition", index),
        topic=_name(row, "topic", TOPIC_NAME_MAX_LENGTH, "partition", index),
        partition=_integer(row, "partition", "partition", index),
        committed_offset=_integer(row, "committed_offset", "partition", index),
        end_offset=_optional_integer(row, "end_offset", "partition", index),
        log_start_offset=_optional_integer(row, "log_start_offset", "partition", index),
        offset_lag=_integer(row, "offset_lag", "partition", index),
        time_lag_seconds=_optional_number(row, "time_lag_seconds", "partition", index),
        status=_choice(row, "status", PARTITION_STATUSES, "partition", index),
        retention_risk=bool(row.get("retention_risk", False)),
        **_trend_fields(row, "partition", index),
        last_commit_at=_aware(last_commit_at, f"partition row {index}: last_commit_at") if last_commit_at is not None else None,
        evaluated_at=evaluated_at,
    )


def _trend_fields(row: Mapping[str, Any], what: str, index: int) -> dict[str, Any]:
    return {
        "lag_rate": _optional_number(row, "lag_rate", what, index),
        "catch_up_seconds": _optional_number(row, "catch_up_seconds", what, index),
        "retention_seconds": _optional_number(row, "retention_seconds", what, index),
        "retention_status": _choice({"retention_status": row.get("retention_status", "OK")}, "retention_status", RETENTION_STATUSES, what, index),
    }


def _prune(now: datetime) -> None:
    """Forget lag history, and current lag of groups no longer evaluated (deleted groups),
    older than the history kept."""
    from webapp.metering.models import GroupLag, GroupLagHistory, PartitionLag

    cutoff = now - timedelta(days=history_days())
    GroupLagHistory.objects.filter(evaluated_at__lt=cutoff).delete()
    GroupLag.objects.filter(evaluated_at__lt=cutoff).delete()
    PartitionLag.objects.filter(evaluated_at__lt=cutoff).delete()


def _log_skipped(function: str, skipped: Counter[str], total: int) -> None:
    if skipped:
        tenants = ", ".join(f"{tenant} ({count})" for tenant, count in sorted(skipped.items()))
        logger.info("%s: skipped %d of %d rows of unknown tenants: %s", function, sum(skipped.values()), total, tenants)


def _aware(value: Any, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware (UTC), not naive: {value.isoformat()}")
    return value.astimezone(UTC)


def _bucket_start(row: Mapping[str, Any], granularity: str, index: int) -> datetime:
    value = row.get("bucket_start")
    try:
        bucket_start = _aware(value, "bucket_start")
    except (TypeError, ValueError) as error:
        raise InvalidRow("usage", index, str(error)) from None
    aligned = bucket_start.replace(minute=0, second=0, microsecond=0)
    if granularity == "day":
        aligned = aligned.replace(hour=0)
    if bucket_start != aligned:
        raise InvalidRow("usage", index, f"bucket_start {bucket_start.isoformat()} is not the start of a UTC {granularity}")
    return bucket_start


def _name(row: Mapping[str, Any], key: str, max_length: int, what: str, index: int) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidRow(what, index, f"{key} must be a non-empty string, not {value!r}")
    if len(value) > max_length or "\x00" in value:
        raise InvalidRow(what, index, f"{key} {value[:40]!r}... is longer than {max_length} characters or holds NUL")
    return value


def _choice(row: Mapping[str, Any], key: str, choices: tuple[str, ...], what: str, index: int) -> str:
    value = row.get(key)
    if value not in choices:
        raise InvalidRow(what, index, f"{key} must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _integer(row: Mapping[str, Any], key: str, what: str, index: int) -> int:
    value = row.get(key)
    if value is None:
        raise InvalidRow(what, index, f"{key} is missing")
    return _as_integer(value, key, what, index)


def _optional_integer(row: Mapping[str, Any], key: str, what: str, index: int) -> int | None:
    value = row.get(key)
    return None if value is None else _as_integer(value, key, what, index)


def _as_integer(value: Any, key: str, what: str, index: int) -> int:
    # numpy and Spark hand over their own integer types, and float sums of whole numbers.
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidRow(what, index, f"{key} must be an integer, not {value!r}") from None
    if isinstance(value, bool) or number != value:
        raise InvalidRow(what, index, f"{key} must be an integer, not {value!r}")
    return number


def _number(row: Mapping[str, Any], key: str, what: str, index: int) -> float:
    value = _optional_number(row, key, what, index)
    if value is None:
        raise InvalidRow(what, index, f"{key} is missing")
    return value


def _optional_number(row: Mapping[str, Any], key: str, what: str, index: int) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidRow(what, index, f"{key} must be a number, not {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise InvalidRow(what, index, f"{key} must be a finite number, not {value!r}")
    return number
