"""The OpenAPI schema drives schemathesis over every operation, in process through Django's
WSGI application with an owner's cloud key: no input may produce a 500.

Examples are bounded per operation (and the whole module stays well under a minute);
``/sign-up`` and ``/invitations/accept`` run anonymous too, since the key is then unused.
"""

from __future__ import annotations

import base64

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role
from webapp.fleet.models import BrokerNode

EXAMPLES_PER_OPERATION = 8


from webapp.wsgi import application  # noqa: E402  (pytest-django has configured Django by now)

# Loading the schema runs no query: /api/schema/ is public and the request carries no credentials.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.fixture
def database_connection_kept_open():  # type: ignore[no-untyped-def]
    """Django's WSGI handler closes the database connection after each request; inside a
    test's transaction that would lose the test's data (Django's own test client turns this
    off the same way)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def test_schema_and_docs_are_served(client) -> None:  # type: ignore[no-untyped-def]
    openapi = client.get("/api/schema/?format=json")
    docs = client.get("/api/docs/")

    assert openapi.status_code == 200
    assert "/api/v1/topics/{topic_name}/configs:alter" in openapi.json()["paths"]
    assert docs.status_code == 200


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_500(case, database_connection_kept_open: None, acme: TenantFixture, registered_broker: BrokerNode) -> None:  # type: ignore[no-untyped-def]
    key_id, secret = acme.secrets[Role.OWNER]
    token = base64.b64encode(f"{key_id}:{secret}".encode()).decode()

    case.call_and_validate(headers={"Authorization": f"Basic {token}"}, checks=[not_a_server_error])
