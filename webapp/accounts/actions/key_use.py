"""Recording when brokers last saw each cluster key used, and by which applications.

The provisioning reconciler calls this (through accounts' facade) with what brokers report. It
was split from ``keys`` when ``keys`` imported provisioning; since accounts records jobs through
``webapp.common.changes`` it imports no app above it, and this stays a module of one concern.

Applications are client-supplied (a Kafka client.id, KIP-511 software name and version): each
value is cut to ``KEY_APPLICATION_FIELD_CHARS`` and stripped of control characters here again,
whatever the broker did, and each key keeps its ``MAX_KEY_APPLICATIONS`` most recently seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from webapp.accounts.models import KEY_APPLICATION_FIELD_CHARS, MAX_KEY_APPLICATIONS, ApiKey, ApiKeyApplication, ApiKeyKind

_ADDRESS_CHARS = 64


@dataclass(frozen=True)
class SeenApplication:
    """One application a broker saw using a key (values as the client sent them), first and last seen in ms since the epoch."""

    client_id: str
    software_name: str
    software_version: str
    address: str
    first_seen_ms: int
    last_seen_ms: int


def do_record_cluster_key_use(last_used_ms_by_key: Mapping[str, int]) -> int:
    """Set the last_used_at of cluster keys from the brokers' reports (key id -> ms since the
    epoch), never moving it backwards. Two queries whatever the number of keys; returns how
    many keys changed."""
    changed = []
    for key in ApiKey.objects.filter(kind=ApiKeyKind.CLUSTER, key_id__in=list(last_used_ms_by_key)):
        used_at = _moment(last_used_ms_by_key[key.key_id])
        if key.last_used_at is None or key.last_used_at < used_at:
            key.last_used_at = used_at
            changed.append(key)
    ApiKey.objects.bulk_update(changed, ["last_used_at"])
    return len(changed)


def do_record_key_applications(seen_by_key: Mapping[str, Iterable[SeenApplication]]) -> int:
    """Record the applications brokers saw using cluster keys (key id -> what any broker saw),
    widening each one's first/last seen, then keep each key's ``MAX_KEY_APPLICATIONS`` most
    recently seen. A fixed number of queries whatever the number of keys and applications;
    unknown and cloud key ids are ignored. Returns how many rows were created or changed."""
    keys = {key.key_id: key for key in ApiKey.objects.filter(kind=ApiKeyKind.CLUSTER, key_id__in=list(seen_by_key))}
    if not keys:
        return 0
    seen: dict[tuple[int, tuple[str, str, str, str]], list[int]] = {}
    for key_id, applications in seen_by_key.items():
        key = keys.get(key_id)
        if key is None:
            continue
        for app in applications:
            identity = (_clean(app.client_id), _clean(app.software_name), _clean(app.software_version), _clean(app.address, _ADDRESS_CHARS))
            span = seen.setdefault((key.pk, identity), [app.first_seen_ms, app.last_seen_ms])
            span[0], span[1] = min(span[0], app.first_seen_ms), max(span[1], app.last_seen_ms)
    # Only each key's most recent applications can be kept: do not write rows pruned at once.
    newest = sorted(seen.items(), key=lambda item: item[1][1], reverse=True)
    per_key: dict[int, int] = {}
    wanted = {}
    for (key_pk, identity), span in newest:
        if per_key.get(key_pk, 0) < MAX_KEY_APPLICATIONS:
            per_key[key_pk] = per_key.get(key_pk, 0) + 1
            wanted[(key_pk, identity)] = span
    existing = {
        (row.api_key_id, (row.client_id, row.software_name, row.software_version, row.address)): row
        for row in ApiKeyApplication.objects.filter(api_key_id__in=list(per_key))
    }
    created, changed = [], []
    for (key_pk, identity), (first_ms, last_ms) in wanted.items():
        first, last = _moment(first_ms), _moment(last_ms)
        row = existing.get((key_pk, identity))
        if row is None:
            client_id, software_name, software_version, address = identity
            created.append(
                ApiKeyApplication(
                    api_key_id=key_pk,
                    client_id=client_id,
                    software_name=software_name,
                    software_version=software_version,
                    address=address,
                    first_seen_at=first,
                    last_seen_at=last,
                )
            )
        elif first < row.first_seen_at or last > row.last_seen_at:
            row.first_seen_at, row.last_seen_at = min(first, row.first_seen_at), max(last, row.last_seen_at)
            changed.append(row)
    ApiKeyApplication.objects.bulk_create(created, ignore_conflicts=True)  # a concurrent round may have made the same row
    ApiKeyApplication.objects.bulk_update(changed, ["first_seen_at", "last_seen_at"])
    _prune(list(per_key))
    return len(created) + len(changed)


def _prune(key_pks: list[int]) -> None:
    """Delete all but each key's ``MAX_KEY_APPLICATIONS`` most recently seen applications (two queries)."""
    kept: dict[int, int] = {}
    doomed = []
    rows = ApiKeyApplication.objects.filter(api_key_id__in=key_pks).order_by("api_key_id", "-last_seen_at", "-pk").values_list("pk", "api_key_id")
    for pk, key_pk in rows:
        kept[key_pk] = kept.get(key_pk, 0) + 1
        if kept[key_pk] > MAX_KEY_APPLICATIONS:
            doomed.append(pk)
    if doomed:
        ApiKeyApplication.objects.filter(pk__in=doomed).delete()


def _clean(value: str, limit: int = KEY_APPLICATION_FIELD_CHARS) -> str:
    """A client-supplied value made safe to store: printable characters only, at most ``limit``."""
    value = value[:limit]
    return value if value.isprintable() else "".join(char if char.isprintable() else "?" for char in value)


def _moment(milliseconds: int) -> datetime:
    return datetime.fromtimestamp(milliseconds / 1000, tz=UTC)
