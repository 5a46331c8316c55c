"""Issue 18 items 5, 6 and 8 in a real browser (Debian's Chromium driven by Playwright) against one
live Django server shared by every step (one test: the server is the one process it needs; no
broker, so pages that ask brokers show their "unavailable" state, which must lay out too).

- The audit log lists a change made through each door: the dashboard (an ACL template applied
  in the browser), REST (over HTTP with a cloud key), and the SDK and Kafka admin doors (a
  broker's forwarded CreateAcls handled by the controller's RPC handler in-process, as the
  controller process runs it); the door filter and the CSV export work.
- Deleting an ACL shows what stops working and Cancel changes nothing; the explainer names the
  deciding binding.
- At 390 px no main page scrolls sideways and the navigation collapses behind Menu; with the
  system's dark setting the page is dark.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.browser.test_dashboard_flow import CHROMIUM, CHROMIUM_ARGS, STEP_TIMEOUT_MS, live_server, page  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium to run the browser test"),
]
PASSWORD = "a long enough password 42"
PHONE = {"width": 390, "height": 844}
SCREENSHOT_PAGES = {"/", "/acls/", "/audit-log/"}  # at 390 px, for a person to look at (each costs a fraction of a second)


def _forward_create_acl(tenant_id: str, principal: str, door: str, client_host: str) -> None:
    """A broker's forwarded CreateAcls through the controller's RPC handler (its audit door)."""
    from grpc_protos.weir.v1 import controller_pb2
    from webapp.controller import acl_requests
    from webapp.controller.servicer import ControllerServicer
    from webapp.provisioning.facade import INTERNAL_TOKEN_METADATA

    service = SimpleNamespace(create_acls=lambda forwarded: acl_requests.create_acls(forwarded.caller, list(forwarded.creations)).response)
    servicer = ControllerServicer(service, internal_token="internal")  # type: ignore[arg-type]
    context = SimpleNamespace(invocation_metadata=lambda: [(INTERNAL_TOKEN_METADATA, "internal")])
    binding = controller_pb2.ForwardedAclBinding(
        resource_type="TOPIC", resource_name=f"{door}-topic", pattern_type="LITERAL", principal=principal, host="*", operation="WRITE", permission="ALLOW"
    )
    caller = controller_pb2.ForwardedCaller(tenant_id=tenant_id, principal=principal, client_host=client_host, door=door)
    response = servicer.CreateAcls(controller_pb2.ForwardedCreateAclsRequest(caller=caller, creations=[binding]), context)  # type: ignore[arg-type]
    assert [result.error_code for result in response.results] == [0]


def _rest_post(url: str, key_id: str, secret: str, body: dict[str, object]) -> int:
    token = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


def _sign_in(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/sign-in/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Acme')")


def test_audit_log_confirmations_explainer_phone_layout_and_dark_theme(live_server, page, tmp_path: Path, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # sign-up and sign-in hash once each; the slow hasher is not under test
    from django.db import connection

    from tests.support.processes import free_port
    from webapp.accounts.actions.keys import KeyOwner, do_create_key
    from webapp.accounts.actions.service_accounts import do_create_service_account
    from webapp.accounts.actions.signup import do_sign_up
    from webapp.accounts.identity import actor_for_user
    from webapp.catalog.actions.topics import check_create_topic, do_create_topic
    from webapp.catalog.models import AclBinding
    from webapp.fleet.models import BrokerNode, BrokerState
    from webapp.provisioning import tasks

    connection.close()  # a new connection for this test's own database calls (see test_dashboard_flow.py)
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)  # provisioning jobs are recorded, not run: no broker here
    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)  # nothing listens: brokers "unavailable"
    signed_up = do_sign_up("alice", "alice@acme.example", PASSWORD, "Acme")
    actor = actor_for_user(signed_up.user)
    assert actor is not None
    account = do_create_service_account(actor, "billing-app", "", "developer")
    cloud = do_create_key(actor, "cloud", KeyOwner(membership=signed_up.membership), "ci")
    do_create_topic(actor, check_create_topic(actor, "orders", 3, 1, {}))  # its job is recorded, not run (no broker)
    shots = tmp_path / "screenshots"
    shots.mkdir()

    # Dashboard door: the consumer template, in the browser.
    _sign_in(page, live_server.url)
    page.click("nav >> text=ACLs")
    page.click("text=Add for an application")
    page.check("input[name=template][value=consumer]")
    page.select_option("#id_principal", account.principal)
    page.fill("#id_topic", "orders")
    page.fill("#id_group", "billing")
    page.click("button:has-text('Create bindings')")
    page.wait_for_selector("text=3 ACL binding(s) created")
    # REST door, and the SDK and Kafka admin doors (forwarded by a broker to the controller).
    rest_body = {"resource_type": "TOPIC", "resource_name": "rest-topic", "principal": account.principal, "operation": "WRITE"}
    assert _rest_post(f"{live_server.url}/api/v1/acls", cloud.key.key_id, cloud.secret, rest_body) == 201
    _forward_create_acl(actor.tenant.public_id, account.principal, "sdk", "192.0.2.10")
    _forward_create_acl(actor.tenant.public_id, account.principal, "kafka", "192.0.2.11")

    page.click("nav >> text=Audit log")
    page.wait_for_url("**/audit-log/")  # count() does not wait: read the audit page, not the ACL page still shown
    page.wait_for_selector("table tbody tr:has-text('Kafka protocol admin')")
    log = page.locator("table tbody")
    for door_label in ("Dashboard", "REST API", "SDK admin", "Kafka protocol admin"):
        assert log.locator("tr", has_text=door_label).count() >= 1, door_label
    assert "192.0.2.11" in log.inner_text() and cloud.key.key_id in log.inner_text()
    page.select_option("#audit-door", "kafka")
    page.click("button:has-text('Filter')")
    page.wait_for_url("**door=kafka**")
    assert page.locator("table tbody tr").count() == 1 and "kafka-topic" in page.locator("table tbody").inner_text()
    exported = page.request.get(f"{live_server.url}/audit-log/?export=csv&action=acl.create")
    assert exported.ok and exported.text().count("acl.create") == 6  # 3 from the template, REST, SDK, Kafka
    page.screenshot(path=str(shots / "audit-log.png"), full_page=True)

    # Delete asks first; Cancel changes nothing. The explainer names the deciding binding.
    bindings_before = AclBinding.objects.count()
    page.click("nav >> text=ACLs")
    page.locator("tr", has_text="rest-topic").locator("text=Delete…").click()
    page.wait_for_selector("h2:has-text('What stops working')")
    assert "can no longer WRITE TOPIC 'rest-topic'" in page.inner_text(".consequences")
    page.screenshot(path=str(shots / "acl-delete-confirm.png"), full_page=True)
    page.click("a:has-text('Cancel')")
    page.wait_for_selector("h1:has-text('ACL bindings')")
    assert AclBinding.objects.count() == bindings_before
    page.click("text=Explain access")
    page.select_option("#id_principal", account.principal)
    page.select_option("#id_operation", "DESCRIBE")
    page.fill("#id_resource_name", "orders")
    page.click("button:has-text('Explain')")
    page.wait_for_selector(".explanation")
    verdict = page.inner_text(".explanation")
    deciding = AclBinding.objects.get(resource_name="orders", operation="READ")
    assert verdict.startswith("Allowed") and deciding.public_id in verdict and "implies DESCRIBE" in verdict

    # 390 px wide: no sideways scroll on any main page; the navigation opens from Menu.
    main_pages = [
        "/",
        "/topics/",
        "/topics/orders/",
        "/topics/orders/messages/",
        "/topics/orders/produce/",
        "/groups/",
        "/transactions/",
        "/acls/",
        "/acls/explain/",
        "/acls/from-template/",
        f"/acls/{deciding.public_id}/delete/",
        "/service-accounts/",
        f"/service-accounts/{account.public_id}/",
        "/api-keys/",
        f"/api-keys/{cloud.key.key_id}/revoke/",
        "/jobs/",
        "/members/",
        "/brokers/",
        "/usage/",
        "/pipelines/",
        "/audit-log/",
    ]
    browser = page.context.browser
    for scheme in ("light", "dark"):
        phone = browser.new_context(viewport=PHONE, color_scheme=scheme, storage_state=page.context.storage_state())
        phone.set_default_timeout(STEP_TIMEOUT_MS)
        small = phone.new_page()
        try:
            wide = []
            for path in main_pages if scheme == "light" else ["/", "/audit-log/"]:
                small.goto(f"{live_server.url}{path}")
                small.wait_for_load_state("load")
                widths = small.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                if widths[0] > widths[1]:
                    wide.append((path, widths))
                if path in SCREENSHOT_PAGES:
                    small.screenshot(path=str(shots / f"{scheme}-390-{path.strip('/').replace('/', '_') or 'overview'}.png"), full_page=True)
            assert wide == [], f"pages wider than 390 px: {wide}"
            if scheme == "light":
                assert not small.is_visible("#main-nav >> text=Topics")
                small.click("button.nav-toggle")
                assert small.is_visible("#main-nav >> text=Topics")
            else:
                background = small.evaluate("getComputedStyle(document.body).backgroundColor")
                red, green, blue = (int(part) for part in background[background.index("(") + 1 : background.index(")")].split(",")[:3])
                assert red + green + blue < 150, background  # dark
        finally:
            phone.close()
