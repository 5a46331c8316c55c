"""The cloud API keys this web process verified lately, so that a REST call does not look its key up again.

Looking a key up (one query joining the key, its tenant, its owner and the owner's user, and four
model instances built from the row) was about a third of a GET's cost (issue 19 goal 6). A key
verified once is kept here for a short time and each later request with the same key id and secret
is answered from memory.

- Entries are keyed by a keyed digest (HMAC-SHA-256 under a random key of this process) of the key
  id and the secret as presented: a wrong secret never finds an entry, and no secret is kept.
- An entry lives ``ttl_seconds`` (setting ``WEIR_API_KEY_CACHE_SECONDS``, :data:`DEFAULT_TTL_SECONDS`;
  0 turns the cache off). That is the bound within which a key revoked, an owner's role changed or a
  user deactivated *by another process* takes effect here; in this process any save or delete of a
  key, member, service account, tenant or user empties the cache at once (see
  :func:`connect_invalidation`), so the process that revokes a key refuses it from the next request.
- At most ``max_entries`` keys (:data:`MAX_ENTRIES`); when full, the entry that expires first goes.
- Each hit hands out a fresh copy of the key and its related objects, so a view that changes the
  tenant or the key it was given never changes what the next request sees.

Thread-safe: one lock around the table. Time comes from the injected ``clock`` (``time.monotonic``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.signals import post_delete, post_save

from webapp.accounts.models import ApiKey, Membership, ServiceAccount, Tenant

DEFAULT_TTL_SECONDS = 2.0  # a revocation elsewhere takes effect within this (WEIR_API_KEY_CACHE_SECONDS)
MAX_ENTRIES = 1024  # keys remembered per process; a bench or a busy tenant uses a handful

_Model = TypeVar("_Model", bound=Model)


@dataclass(frozen=True, slots=True)
class _Entry:
    key: ApiKey  # with tenant, owner_service_account and owner_membership__user loaded
    expires_at: float


class VerifiedKeyCache:
    """See the module docstring."""

    def __init__(self, ttl_seconds: float, *, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_seconds = ttl_seconds
        self._max_entries = max_entries
        self._clock = clock
        self._digest_key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._entries: dict[bytes, _Entry] = {}

    @property
    def enabled(self) -> bool:
        return self._ttl_seconds > 0

    def _digest(self, key_id: str, secret: str) -> bytes:
        # The id and secret are joined with a byte neither can hold, so no two pairs share a digest input.
        return hmac.digest(self._digest_key, f"{key_id}\0{secret}".encode(), hashlib.sha256)

    def get(self, key_id: str, secret: str) -> ApiKey | None:
        """A copy of the key verified with exactly this id and secret less than the TTL ago, else None."""
        if not self.enabled:
            return None
        digest = self._digest(key_id, secret)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None:
                return None
            if entry.expires_at <= now:
                del self._entries[digest]
                return None
            key = entry.key
        return _fresh_copy(key)

    def put(self, key_id: str, secret: str, key: ApiKey) -> None:
        """Remember ``key``, just verified with this id and secret (a copy is kept)."""
        if not self.enabled:
            return
        digest = self._digest(key_id, secret)
        entry = _Entry(_fresh_copy(key), self._clock() + self._ttl_seconds)
        with self._lock:
            if digest not in self._entries and len(self._entries) >= self._max_entries:
                self._evict_locked()
            self._entries[digest] = entry

    def _evict_locked(self) -> None:
        now = self._clock()
        expired = [digest for digest, entry in self._entries.items() if entry.expires_at <= now]
        for digest in expired:
            del self._entries[digest]
        if len(self._entries) >= self._max_entries:
            del self._entries[min(self._entries, key=lambda digest: self._entries[digest].expires_at)]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _fresh_copy(instance: _Model) -> _Model:
    """A new instance with the same field values and fresh copies of the related objects it has
    loaded, as a query would have built it (without copy.deepcopy's generic walk, several times dearer).
    Field values are shared: they are immutable (text, numbers, datetimes) on these models."""
    clone = object.__new__(type(instance))
    clone.__dict__.update(instance.__dict__)
    state = ModelState()
    state.db = instance._state.db
    state.adding = instance._state.adding
    state.fields_cache = {name: None if related is None else _fresh_copy(related) for name, related in instance._state.fields_cache.items()}
    clone._state = state
    return clone


def ttl_seconds() -> float:
    return float(getattr(settings, "WEIR_API_KEY_CACHE_SECONDS", DEFAULT_TTL_SECONDS))


_cache: VerifiedKeyCache | None = None
_cache_lock = threading.Lock()


def verified_keys() -> VerifiedKeyCache:
    """This process's cache (made on first use with the configured TTL)."""
    global _cache
    with _cache_lock:
        if _cache is None:
            _cache = VerifiedKeyCache(ttl_seconds())
        return _cache


def reset_verified_keys() -> None:
    """Forget the cache and its TTL (tests that change ``WEIR_API_KEY_CACHE_SECONDS``)."""
    global _cache
    with _cache_lock:
        _cache = None


def _forget_every_key(**_: object) -> None:
    with _cache_lock:
        cache = _cache
    if cache is not None:
        cache.clear()


def connect_invalidation() -> None:
    """Empty this process's cache whenever a key, member, service account, tenant or user is saved
    or deleted here (AppConfig.ready). Rare changes; clearing everything keeps the rule simple."""
    for model in (ApiKey, Membership, ServiceAccount, Tenant, get_user_model()):
        for signal in (post_save, post_delete):
            signal.connect(_forget_every_key, sender=model, weak=False, dispatch_uid=f"weir-key-cache-{signal is post_save}-{model._meta.label}")
