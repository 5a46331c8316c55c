"""Recording when brokers last saw each cluster key used.

The provisioning reconciler calls this (through accounts' facade) with what brokers report. It
was split from ``keys`` when ``keys`` imported provisioning; since accounts records jobs through
``webapp.common.changes`` it imports no app above it, and this stays a module of one concern.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from webapp.accounts.models import ApiKey, ApiKeyKind


def do_record_cluster_key_use(last_used_ms_by_key: Mapping[str, int]) -> int:
    """Set the last_used_at of cluster keys from the brokers' reports (key id -> ms since the
    epoch), never moving it backwards. Two queries whatever the number of keys; returns how
    many keys changed."""
    changed = []
    for key in ApiKey.objects.filter(kind=ApiKeyKind.CLUSTER, key_id__in=list(last_used_ms_by_key)):
        used_at = datetime.fromtimestamp(last_used_ms_by_key[key.key_id] / 1000, tz=UTC)
        if key.last_used_at is None or key.last_used_at < used_at:
            key.last_used_at = used_at
            changed.append(key)
    ApiKey.objects.bulk_update(changed, ["last_used_at"])
    return len(changed)
