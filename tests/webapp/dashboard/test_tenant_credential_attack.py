"""Issue 12's attack, replayed end to end against a real secured broker, and shown to fail.

The attack: a dashboard page fails, its error report shows the SDK client configuration the
web process built for tenant A, and the attacker uses that credential against the brokers to
read tenant B (by adding B's id to a header), every tenant and the internal topics (by leaving
the tenant out), or later (once the page is long gone). Here the broker is a real process with
``security.required``, managed by the control plane (registered in its catalog, topics
provisioned by its jobs); tenants acme (A) and globex (B) both own a topic ``orders`` and
globex also ``secret-plans``.
"""

from __future__ import annotations

import base64
import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc
import pytest
from django.conf import settings as django_settings
from django.core.signals import got_request_exception
from django.urls import reverse
from django.views.debug import ExceptionReporter

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.support.group_broker import produce
from tests.webapp.dashboard.conftest import Member
from tests.webapp.group_broker import control_plane_broker, provision_topic
from webapp import tenant_clients
from webapp.dashboard import data_plane
from weir import Consumer, KafkaException, TopicPartition, records
from weir.admin import AdminClient
from weir.consumer import consume_available
from weir.errors import ErrorCode
from weir.tenant_tokens import TENANT_TOKEN_HEADER

pytestmark = pytest.mark.django_db

Metadata = Sequence[tuple[str, str]]


def metadata_names(stub: broker_pb2_grpc.BrokerStub, metadata: Metadata, *topics: str) -> dict[str, int]:
    """Topic name -> error code of a Metadata call (every visible topic when none is named)."""
    response = stub.Metadata(broker_pb2.MetadataRequest(topics=list(topics)), metadata=metadata, timeout=10)
    return {topic.name: topic.error_code for topic in response.topics}


def fetch_values(stub: broker_pb2_grpc.BrokerStub, metadata: Metadata, topic: str) -> tuple[int, list[bytes | None]]:
    """(error code, record values) of a Fetch of partition 0 of ``topic`` from offset 0."""
    request = broker_pb2.FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        replica_id=-1,
        topics=[broker_pb2.FetchTopic(topic=topic, partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)])],
    )
    [answer] = stub.Fetch(request, metadata=metadata, timeout=10).topics[0].partitions
    return answer.error_code, [record.value for record in records.iter_records(answer.records)]


def unauthenticated(call: Callable[[], Any]) -> str:
    """The message of the UNAUTHENTICATED status ``call`` must end with."""
    with pytest.raises(grpc.RpcError) as raised:
        call()
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED, raised.value
    return raised.value.details()


def test_the_dashboards_credential_for_one_tenant_opens_nothing_else_and_never_shows_in_an_error_report(
    make_tenant: Callable[[str], Member],
    settings,
    tmp_path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,  # type: ignore[no-untyped-def]
) -> None:
    caplog.set_level(logging.DEBUG)
    acme, globex = make_tenant("acme"), make_tenant("globex")
    tenant_a, tenant_b = acme.tenant.public_id, globex.tenant.public_id
    with control_plane_broker(tmp_path / "broker", settings, configs={"security.required": "true"}) as broker:
        provision_topic(acme.actor, "orders", partitions=1)
        provision_topic(globex.actor, "orders", partitions=1)
        provision_topic(globex.actor, "secret-plans", partitions=1)
        produce(tenant_clients.client_config(tenant_a), "orders", {0: 2})
        produce(tenant_clients.client_config(tenant_b), "orders", {0: 3})
        produce(tenant_clients.client_config(tenant_b), "secret-plans", {0: 4})

        # The page builds its client configuration; keep what it handed to the SDK.
        handed_out: list[dict[str, Any]] = []
        original_client_config = data_plane.client_config
        monkeypatch.setattr(data_plane, "client_config", lambda tenant: handed_out.append(original_client_config(tenant)) or handed_out[-1])
        page = acme.client.get(
            reverse("dashboard:topic_messages", args=["orders"]), {"partition": 0, "start": "offset", "offset": 0, "limit": 10, "format": "text"}
        )
        assert page.status_code == 200 and "0-1" in page.content.decode()
        [config_a] = handed_out
        stolen = config_a["weir.tenant.token"]
        assert django_settings.WEIR_INTERNAL_TOKEN not in repr(config_a), "the web process handed the all-tenant token to the data plane"

        stub = broker_pb2_grpc.BrokerStub(grpc.insecure_channel(broker.address))
        as_a = ((TENANT_TOKEN_HEADER, stolen),)
        assert metadata_names(stub, as_a) == {"orders": ErrorCode.NO_ERROR}
        assert fetch_values(stub, as_a, "orders") == (ErrorCode.NO_ERROR, [b"0-0", b"0-1"])

        # (a) The stolen credential with B's id in a header: refused, or it sees nothing of B.
        message = unauthenticated(lambda: metadata_names(stub, as_a + (("x-weir-tenant", tenant_b),)))
        assert "x-weir-tenant is no longer accepted" in message and stolen not in message
        unauthenticated(lambda: fetch_values(stub, as_a + (("x-weir-tenant", tenant_b),), "secret-plans"))
        for header in ("x-weir-tenant-id", "tenant", "x-weir-cluster"):
            assert metadata_names(stub, as_a + ((header, tenant_b),)) == {"orders": ErrorCode.NO_ERROR}
            assert fetch_values(stub, as_a + ((header, tenant_b),), "orders") == (ErrorCode.NO_ERROR, [b"0-0", b"0-1"])
        # B's topic by its plain name and by its stored name: as if it did not exist.
        assert metadata_names(stub, as_a, "secret-plans") == {"secret-plans": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        for name in ("secret-plans", f"{tenant_b}~secret-plans", f"{tenant_b}~orders"):
            code, values = fetch_values(stub, as_a, name)
            assert code != ErrorCode.NO_ERROR and values == [], name
        # Rewriting the token's tenant to B breaks its signature.
        version, _, expiry, purpose, signature = stolen.split(".")
        forged = ".".join((version, base64.urlsafe_b64encode(tenant_b.encode()).rstrip(b"=").decode(), expiry, purpose, signature))
        assert "signature does not match" in unauthenticated(lambda: metadata_names(stub, ((TENANT_TOKEN_HEADER, forged),)))
        # Through the SDK with the very configuration the page used: B's topic is unknown.
        consumer = Consumer({**config_a, "group.id": "attacker", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            consumer.assign([TopicPartition("secret-plans", 0, 0)])
            deadline = time.monotonic() + 5
            seen = []
            while time.monotonic() < deadline:
                seen += [message.value() for message in consume_available(consumer, 10, 0.5) if message.error() is None]
            assert seen == []
        finally:
            consumer.close()

        # (b) Without naming any tenant, the credential still lists only A's plain names: no
        # other tenant's topic, no internal topic (the all-tenant internal token does see them).
        admin = AdminClient(config_a)
        try:
            assert set(admin.list_topics(timeout=10).topics) == {"orders"}
        finally:
            admin.close()
        every_name = metadata_names(stub, (("x-weir-internal-token", django_settings.WEIR_INTERNAL_TOKEN),))
        assert {f"{tenant_b}~secret-plans", "__consumer_offsets"} <= set(every_name)
        assert not {name for name in metadata_names(stub, as_a) if "~" in name or name.startswith("__")}
        with pytest.raises(grpc.RpcError) as no_credential:  # and no credential at all opens nothing
            metadata_names(stub, ())
        assert no_credential.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNAVAILABLE)

        # (c) A token past its lifetime is refused.
        lifetime_ms = django_settings.WEIR_TENANT_TOKEN_LIFETIME_SECONDS * 1000
        expired = tenant_clients.tenant_token(tenant_a, now_ms=time.time_ns() // 1_000_000 - lifetime_ms - 1)
        assert "expired" in unauthenticated(lambda: fetch_values(stub, ((TENANT_TOKEN_HEADER, expired),), "orders"))

        # (d) The all-tenant internal token acting as a tenant is refused.
        impersonating = (("x-weir-internal-token", django_settings.WEIR_INTERNAL_TOKEN), ("x-weir-tenant", tenant_b))
        message = unauthenticated(lambda: fetch_values(stub, impersonating, "secret-plans"))
        assert TENANT_TOKEN_HEADER in message and django_settings.WEIR_INTERNAL_TOKEN not in message

        # (e) A page that fails while holding the configuration: its error report shows no secret.
        settings.DEBUG = False
        reports: list[str] = []

        def report(sender: object, request: Any, **kwargs: object) -> None:
            reporter = ExceptionReporter(request, *sys.exc_info())
            reports.extend((reporter.get_traceback_html(), reporter.get_traceback_text()))

        def broken_watermarks(self: Consumer, *args: object, **kwargs: object) -> None:
            raise ValueError("year 146140482 is out of range")

        monkeypatch.setattr(Consumer, "get_watermark_offsets", broken_watermarks)
        got_request_exception.connect(report)
        try:
            with pytest.raises(ValueError, match="year 146140482"):
                acme.client.get(reverse("dashboard:topic_messages", args=["orders"]), {"partition": 0, "start": "latest", "limit": 10, "format": "text"})
        finally:
            got_request_exception.disconnect(report)
        html, text = reports
        assert "scan_topic" in html and "year 146140482 is out of range" in text  # the report is there, with its frames
        leaked_token = handed_out[-1]["weir.tenant.token"]
        for secret in (leaked_token, stolen, django_settings.WEIR_INTERNAL_TOKEN, django_settings.WEIR_TENANT_TOKEN_KEY):
            assert secret not in html and secret not in text
        with pytest.raises(KafkaException, match='"weir.tenant" was removed'):
            Consumer({**config_a, "weir.tenant": tenant_b})
        # No credential in any log line: the web process's (this one) nor the broker's.
        logs = caplog.text + broker.read_log()
        assert "year 146140482" in caplog.text  # the failed page was logged
        for secret in (leaked_token, stolen, expired, forged, django_settings.WEIR_INTERNAL_TOKEN, django_settings.WEIR_TENANT_TOKEN_KEY):
            assert secret not in logs
