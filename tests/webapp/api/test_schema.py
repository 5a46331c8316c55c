"""The OpenAPI schema drives schemathesis over every operation of a running server (a live
HTTP server on loopback) with an owner's cloud key: no input may produce a 500.

Examples are bounded per operation (and the whole module stays well under a minute);
``/sign-up`` and ``/invitations/accept`` run anonymous too, since the key is then unused.
No broker runs here: operations that ask the brokers (consumer groups) answer their
documented 503, which must carry the standard error body; any other 5xx fails.
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


def _served_schema() -> dict:
    # pytest-django has configured Django by now; serving the schema runs no query.
    from django.test import Client

    return Client().get("/api/schema/?format=json").json()


# The operations come from the schema the application serves; every generated case is sent
# over HTTP to a live server (see ``live_server``).
schema = schemathesis.openapi.from_dict(_served_schema())


@schemathesis.check
def not_a_server_error_unless_documented_503(ctx, response, case) -> None:  # type: ignore[no-untyped-def]
    """``not_a_server_error``, except a 503 the operation documents (brokers unreachable),
    which must still be the standard error body."""
    if response.status_code == 503 and "503" in case.operation.definition.raw.get("responses", {}):
        body = response.json()
        assert body["error_code"] == 503 and body["message"], body
        return None
    return not_a_server_error(ctx, response, case)


@pytest.fixture
def live_server(transactional_db: None, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from tests.support.live_server import running_live_server
    from webapp.provisioning import tasks

    # The server's actions commit, so their provisioning jobs would really be queued; this
    # test is about the HTTP surface, and no worker or broker is running.
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)
    with running_live_server() as server:
        yield server


def test_schema_and_docs_are_served(client) -> None:  # type: ignore[no-untyped-def]
    openapi = client.get("/api/schema/?format=json")
    docs = client.get("/api/docs/")

    assert openapi.status_code == 200
    assert "/api/v1/topics/{topic_name}/configs:alter" in openapi.json()["paths"]
    assert docs.status_code == 200


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_500(case, live_server, acme: TenantFixture, registered_broker: BrokerNode) -> None:  # type: ignore[no-untyped-def]
    key_id, secret = acme.secrets[Role.OWNER]
    token = base64.b64encode(f"{key_id}:{secret}".encode()).decode()

    case.call_and_validate(base_url=live_server.url, headers={"Authorization": f"Basic {token}"}, checks=[not_a_server_error_unless_documented_503], timeout=30)
