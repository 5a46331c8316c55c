"""Every resource of one tenant, attempted with another tenant's owner key: 404, never data."""

from __future__ import annotations

import pytest

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.models import Role, ServiceAccount
from webapp.catalog.actions.acls import check_create_acl, do_create_acl
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.catalog.models import AclBinding, Topic
from webapp.fleet.models import BrokerNode
from webapp.provisioning.models import ProvisioningJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_objects(acme: TenantFixture, registered_broker: BrokerNode) -> dict[str, str]:
    owner = acme.actor(Role.OWNER)
    change = do_create_topic(owner, check_create_topic(owner, "secret-orders", 2, 1, {}))
    account = ServiceAccount.objects.create(tenant=acme.tenant, name="acme-app")
    key = do_create_key(owner, "cluster", KeyOwner(service_account=account), "")
    do_create_acl(
        owner,
        check_create_acl(
            owner,
            resource_type="TOPIC",
            resource_name="secret-orders",
            pattern_type="LITERAL",
            principal=account.principal,
            host="*",
            operation="READ",
            permission="ALLOW",
        ),
    )
    return {
        "topic": "secret-orders",
        "account": account.public_id,
        "key": key.key.key_id,
        "job": change.job.public_id,
        "member": acme.members[Role.VIEWER].public_id,
    }


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("get", "/api/v1/topics/{topic}", None),
        ("delete", "/api/v1/topics/{topic}", None),
        ("get", "/api/v1/topics/{topic}/partitions", None),
        ("post", "/api/v1/topics/{topic}/partitions", {"partitions_count": 3}),
        ("get", "/api/v1/topics/{topic}/partitions/0", None),
        ("get", "/api/v1/topics/{topic}/partitions/0/replicas", None),
        ("get", "/api/v1/topics/{topic}/partitions/0/replicas/1", None),
        ("get", "/api/v1/topics/{topic}/configs", None),
        ("post", "/api/v1/topics/{topic}/configs:alter", {"data": [{"name": "retention.ms", "value": "1"}]}),
        ("get", "/api/v1/service-accounts/{account}", None),
        ("patch", "/api/v1/service-accounts/{account}", {"display_name": "mine"}),
        ("delete", "/api/v1/service-accounts/{account}", None),
        ("get", "/api/v1/api-keys/{key}", None),
        ("delete", "/api/v1/api-keys/{key}", None),
        ("get", "/api/v1/jobs/{job}", None),
        ("get", "/api/v1/members/{member}", None),
        ("patch", "/api/v1/members/{member}", {"role": "owner"}),
        ("delete", "/api/v1/members/{member}", None),
    ],
)
def test_other_tenants_object_answers_404(acme_objects: dict[str, str], globex: TenantFixture, method: str, path: str, body: dict | None) -> None:
    response = getattr(globex.client(Role.OWNER), method)(path.format(**acme_objects), body, format="json")

    assert response.status_code == 404, response.content
    for value in acme_objects.values():
        assert value not in response.content.decode()


def test_other_tenants_objects_never_appear_in_lists_and_survive_attempts(acme_objects: dict[str, str], globex: TenantFixture) -> None:
    client = globex.client(Role.OWNER)
    for path in (
        "/api/v1/topics",
        "/api/v1/acls",
        "/api/v1/service-accounts",
        "/api/v1/api-keys",
        "/api/v1/jobs",
        "/api/v1/members",
        "/api/v1/invitations",
        "/api/v1/cluster",
        "/api/v1/brokers",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        for value in acme_objects.values():
            assert value not in response.content.decode(), path

    # The brokers are shared, but the counts are the caller's: acme's two partitions are not in them.
    assert client.get("/api/v1/cluster").json()["partitions_count"] == 0
    assert [broker["replica_partitions_count"] for broker in client.get("/api/v1/brokers").json()["data"]] == [0]

    deleted = client.delete("/api/v1/acls?resource_type=ANY")

    assert deleted.json()["data"] == []
    assert AclBinding.objects.count() == 1
    assert Topic.objects.filter(name="secret-orders").exists()
    assert ProvisioningJob.objects.filter(public_id=acme_objects["job"]).exists()
