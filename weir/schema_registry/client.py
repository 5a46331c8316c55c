"""confluent-kafka's ``SchemaRegistryClient``: the registry's REST API as method calls, with caches.

What it caches, as confluent-kafka does: a schema by its id (an id's schema never changes),
the id and version of a (subject, schema) pair once registered or looked up, a subject's
versions by number, and each subject's latest version (for ``cache.latest.ttl.sec`` seconds when
set, otherwise until :meth:`clear_latest_caches`). Deleting a subject or a version forgets what
was cached of it. Every cache holds at most ``cache.capacity`` entries.

Errors the registry answers are :class:`SchemaRegistryError` with its HTTP status and error code
(40401 subject not found, 40402 version not found, 40403 schema not found, 409 incompatible with
the reasons, 42201 invalid schema...).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from weir.schema_registry.cache import LruCache
from weir.schema_registry.conf import parse_client_conf
from weir.schema_registry.rest import RestClient, path_segment
from weir.schema_registry.schema import RegisteredSchema, Schema, SchemaVersion

__all__ = ["SchemaRegistryClient"]


def _subject_path(subject_name: str, *rest: object) -> str:
    return "/".join(["subjects", path_segment(subject_name), *(path_segment(part) for part in rest)])


class SchemaRegistryClient:
    """A client of one registry (a Weir tenant's: ``http://<web>/schema-registry`` and a cloud API key).

    ``SchemaRegistryClient({"url": ..., "basic.auth.user.info": "key:secret"})``; the keys are
    listed in :mod:`weir.schema_registry.conf`. Thread-safe.
    """

    def __init__(self, conf: dict[str, Any], *, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        parsed = parse_client_conf(conf)
        self._conf = dict(conf)
        self._rest = RestClient(parsed, sleep=sleep)
        capacity = parsed.cache_capacity
        self._schema_by_id: LruCache[int, Schema] = LruCache(capacity, clock=clock)
        self._registered_by_schema: LruCache[tuple[str, Schema], RegisteredSchema] = LruCache(capacity, clock=clock)
        self._by_version: LruCache[tuple[str, int], RegisteredSchema] = LruCache(capacity, clock=clock)
        self._latest: LruCache[str, RegisteredSchema] = LruCache(capacity, ttl=parsed.cache_latest_ttl_sec, clock=clock)

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release (no connection is kept between requests); here as in confluent-kafka."""

    def config(self) -> dict[str, Any]:
        """The configuration the client was given."""
        return dict(self._conf)

    # ---- Schemas ---------------------------------------------------------------------------

    def register_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> int:
        """Register ``schema`` under ``subject_name`` (or find it there); its id."""
        schema_id = self.register_schema_full_response(subject_name, schema, normalize_schemas).schema_id
        assert schema_id is not None
        return schema_id

    def register_schema_full_response(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> RegisteredSchema:
        cached = self._registered_by_schema.get((subject_name, schema))
        if cached is not None:
            return cached
        answer = self._rest.post(_subject_path(subject_name, "versions"), schema.to_dict(), {"normalize": normalize_schemas})
        registered = RegisteredSchema(subject_name, answer.get("version"), answer["id"], answer.get("guid"), schema)
        self._registered_by_schema.set((subject_name, schema), registered)
        self._schema_by_id.set(answer["id"], schema)
        return registered

    def get_schema(self, schema_id: int, subject_name: str | None = None, fmt: str | None = None) -> Schema:
        """The schema with id ``schema_id`` (40403 if this registry has none)."""
        if fmt is None:
            cached = self._schema_by_id.get(schema_id)
            if cached is not None:
                return cached
        answer = self._rest.get(f"schemas/ids/{int(schema_id)}", {"subject": subject_name, "format": fmt})
        schema = Schema.from_dict(answer)
        if fmt is None:
            self._schema_by_id.set(schema_id, schema)
        return schema

    def get_schema_types(self) -> list[str]:
        result: list[str] = self._rest.get("schemas/types")
        return result

    def get_subjects_by_schema_id(self, schema_id: int, subject_name: str | None = None, deleted: bool = False, offset: int = 0, limit: int = -1) -> list[str]:
        query = {"subject": subject_name, "deleted": deleted, "offset": offset, "limit": limit}
        result: list[str] = self._rest.get(f"schemas/ids/{int(schema_id)}/subjects", query)
        return result

    def get_schema_versions(
        self, schema_id: int, subject_name: str | None = None, deleted: bool = False, offset: int = 0, limit: int = -1
    ) -> list[SchemaVersion]:
        query = {"subject": subject_name, "deleted": deleted, "offset": offset, "limit": limit}
        return [SchemaVersion.from_dict(item) for item in self._rest.get(f"schemas/ids/{int(schema_id)}/versions", query)]

    def lookup_schema(
        self, subject_name: str, schema: Schema, normalize_schemas: bool = False, fmt: str | None = None, deleted: bool = False
    ) -> RegisteredSchema:
        """The version and id of ``schema`` under ``subject_name`` (40401 / 40403 if it is not there)."""
        cached = self._registered_by_schema.get((subject_name, schema))
        if cached is not None and cached.version is not None:
            return cached
        query = {"normalize": normalize_schemas, "deleted": deleted, "format": fmt}
        answer = self._rest.post(_subject_path(subject_name), schema.to_dict(), query)
        found = RegisteredSchema.from_dict(answer)
        # The answer's text is the registered one; the cache key is the caller's schema.
        registered = RegisteredSchema(found.subject, found.version, found.schema_id, found.guid, schema if fmt is None else found.schema)
        if fmt is None:
            self._registered_by_schema.set((subject_name, schema), registered)
        return registered

    # ---- Subjects and versions ---------------------------------------------------------------

    def get_subjects(self, subject_prefix: str | None = None, deleted: bool = False, deleted_only: bool = False, offset: int = 0, limit: int = -1) -> list[str]:
        query = {"subjectPrefix": subject_prefix, "deleted": deleted, "deleted_only": deleted_only, "offset": offset, "limit": limit}
        result: list[str] = self._rest.get("subjects", query)
        return result

    def delete_subject(self, subject_name: str, permanent: bool = False) -> list[int]:
        """Soft-delete the subject (or, ``permanent``, remove what was soft-deleted); the versions deleted."""
        result: list[int] = self._rest.delete(_subject_path(subject_name), {"permanent": permanent})
        self._forget_subject(subject_name)
        return result

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        if fmt is None:
            cached = self._latest.get(subject_name)
            if cached is not None:
                return cached
        registered = RegisteredSchema.from_dict(self._rest.get(_subject_path(subject_name, "versions", "latest"), {"format": fmt}))
        if fmt is None:
            self._latest.set(subject_name, registered)
            self._remember(registered)
        return registered

    def get_version(self, subject_name: str, version: int | str, deleted: bool = False, fmt: str | None = None) -> RegisteredSchema:
        if version == "latest" and not deleted:
            return self.get_latest_version(subject_name, fmt)
        key = (subject_name, int(version)) if isinstance(version, int) else None
        if key is not None and fmt is None and not deleted:
            cached = self._by_version.get(key)
            if cached is not None:
                return cached
        registered = RegisteredSchema.from_dict(self._rest.get(_subject_path(subject_name, "versions", version), {"deleted": deleted, "format": fmt}))
        if fmt is None:
            self._remember(registered)
        return registered

    def get_referenced_by(self, subject_name: str, version: int | str = "latest", offset: int = 0, limit: int = -1) -> list[int]:
        result: list[int] = self._rest.get(_subject_path(subject_name, "versions", version, "referencedby"), {"offset": offset, "limit": limit})
        return result

    def get_versions(self, subject_name: str, deleted: bool = False, deleted_only: bool = False, offset: int = 0, limit: int = -1) -> list[int]:
        query = {"deleted": deleted, "deleted_only": deleted_only, "offset": offset, "limit": limit}
        result: list[int] = self._rest.get(_subject_path(subject_name, "versions"), query)
        return result

    def delete_version(self, subject_name: str, version: int | str, permanent: bool = False) -> int:
        result: int = self._rest.delete(_subject_path(subject_name, "versions", version), {"permanent": permanent})
        self._by_version.discard_where(lambda key: key == (subject_name, result))
        self._latest.discard_where(lambda key: key == subject_name)
        self._registered_by_schema.discard_where(lambda key: key[0] == subject_name)
        return result

    # ---- Compatibility and modes -------------------------------------------------------------

    def set_compatibility(self, subject_name: str | None = None, level: str | None = None) -> str:
        """Set the subject's level (or, without a subject, the registry's); the level set."""
        if level is None:
            raise ValueError("level must be set")
        path = "config" if subject_name is None else f"config/{path_segment(subject_name)}"
        answer = self._rest.put(path, {"compatibility": str(level).upper()})
        return str(answer["compatibility"])

    def get_compatibility(self, subject_name: str | None = None) -> str:
        path = "config" if subject_name is None else f"config/{path_segment(subject_name)}"
        return str(self._rest.get(path)["compatibilityLevel"])

    def test_compatibility(self, subject_name: str, schema: Schema, version: int | str = "latest") -> bool:
        """Whether ``schema`` could be registered after ``version`` of the subject by its level."""
        path = f"compatibility/{_subject_path(subject_name, 'versions', version)}"
        return bool(self._rest.post(path, schema.to_dict())["is_compatible"])

    def test_compatibility_all_versions(self, subject_name: str, schema: Schema) -> bool:
        """Whether ``schema`` is compatible with the versions its subject's level checks at registration."""
        return bool(self._rest.post(f"compatibility/{_subject_path(subject_name, 'versions')}", schema.to_dict())["is_compatible"])

    def get_mode(self, subject_name: str) -> str:
        return str(self._rest.get(f"mode/{path_segment(subject_name)}")["mode"])

    def update_mode(self, subject_name: str, mode: str, force: bool = False) -> str:
        return str(self._rest.send("PUT", f"mode/{path_segment(subject_name)}", {"mode": mode}, {"force": force})["mode"])

    def delete_mode(self, subject_name: str) -> str:
        return str(self._rest.delete(f"mode/{path_segment(subject_name)}")["mode"])

    def get_global_mode(self) -> str:
        return str(self._rest.get("mode")["mode"])

    def update_global_mode(self, mode: str, force: bool = False) -> str:
        return str(self._rest.send("PUT", "mode", {"mode": mode}, {"force": force})["mode"])

    def get_contexts(self, offset: int = 0, limit: int = -1) -> list[str]:
        result: list[str] = self._rest.get("contexts", {"offset": offset, "limit": limit})
        return result

    # ---- Caches ------------------------------------------------------------------------------

    def clear_latest_caches(self) -> None:
        self._latest.clear()

    def clear_caches(self) -> None:
        for cache in (self._latest, self._schema_by_id, self._registered_by_schema, self._by_version):
            cache.clear()

    def _remember(self, registered: RegisteredSchema) -> None:
        if registered.subject is None or registered.version is None or registered.schema_id is None:
            return
        self._by_version.set((registered.subject, registered.version), registered)
        self._schema_by_id.set(registered.schema_id, registered.schema)
        self._registered_by_schema.set((registered.subject, registered.schema), registered)

    def _forget_subject(self, subject_name: str) -> None:
        self._latest.discard_where(lambda key: key == subject_name)
        self._by_version.discard_where(lambda key: key[0] == subject_name)
        self._registered_by_schema.discard_where(lambda key: key[0] == subject_name)
