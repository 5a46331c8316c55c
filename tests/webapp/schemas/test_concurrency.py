"""Concurrent registrations of one schema, under several subjects at once, give one id: the
tenant's registry row lock serialises them (committed transactions, threads with their own
database connections; no process is started)."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from tests.webapp.api.conftest import _make_tenant
from webapp.accounts.models import Role
from webapp.schemas.actions.register import register
from webapp.schemas.models import Schema, SubjectVersion

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 4
SCHEMA = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]})


def test_concurrent_registrations_of_one_schema_share_one_id(settings) -> None:  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    actor = _make_tenant("acme").actor(Role.DEVELOPER)
    start = threading.Barrier(THREADS)
    ids: list[int] = []
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=10)
            ids.append(register(actor, f"subject-{index % 2}", {"schema": SCHEMA}).schema_id)
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert ids == [1] * THREADS
    assert Schema.objects.count() == 1
    assert sorted(SubjectVersion.objects.values_list("subject", "version")) == [("subject-0", 1), ("subject-1", 1)]
