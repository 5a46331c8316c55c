"""The request layer's transactional produce check (Kafka's TRANSACTIONAL_ID WRITE, and no transactional
batch without a transactional id), without a broker."""

from __future__ import annotations

from broker_nodes.coordinator.transactions.errors import TransactionalBatchWithoutIdError, TransactionalIdAuthorizationError
from broker_nodes.requests.produce import ProducePartition, transactional_refusal
from broker_nodes.requests.produce_batches import first_transactional_batch
from broker_nodes.security.access import CallContext, CallerKind, anonymous_context
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from weir.records import build_batch

RECORD = (1_700_000_000_000, b"k", b"v", None)


def batch(*, transactional: bool, control: bool = False) -> bytes:
    return build_batch([RECORD, RECORD], producer_id=7, producer_epoch=0, base_sequence=0, transactional=transactional, control=control)


def partitions(*records: bytes) -> list[ProducePartition]:
    return [ProducePartition("orders", index, data) for index, data in enumerate(records)]


def client(tenant: str, *transactional_ids: str) -> CallContext:
    acls = [AclEntry("User:sa-1", ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.WRITE, Permission.ALLOW)]
    acls += [AclEntry("User:sa-1", ResourceType.TRANSACTIONAL_ID, name, PatternType.LITERAL, Operation.WRITE, Permission.ALLOW) for name in transactional_ids]
    return CallContext(tenant, "User:sa-1", "127.0.0.1", CallerKind.CLIENT, tuple(acls))


def test_a_transactional_batch_is_found_behind_plain_batches() -> None:
    plain, transactional = batch(transactional=False), batch(transactional=True)
    assert first_transactional_batch(plain + plain) is None
    assert first_transactional_batch(plain + plain + transactional) == 2
    assert first_transactional_batch(b"") is None


def test_a_control_batch_and_a_malformed_tail_are_left_to_the_append() -> None:
    plain = batch(transactional=False)
    assert first_transactional_batch(batch(transactional=True, control=True)) is None  # the log refuses a client's control batch itself
    assert first_transactional_batch(plain + b"\x00" * 30) is None  # shorter than a header: no attributes to read
    assert first_transactional_batch(plain[:8] + b"\xff\xff\xff\xff" + plain[12:] + batch(transactional=True)) is None  # a negative length


def test_a_transactional_batch_without_an_id_refuses_the_request_naming_where_it_is() -> None:
    writer = client("tn-a", "app")
    refused = transactional_refusal(writer, partitions(batch(transactional=False), batch(transactional=False) + batch(transactional=True)), "")
    assert isinstance(refused, TransactionalBatchWithoutIdError) and isinstance(refused, TransactionalIdAuthorizationError)
    assert "topic 'orders' partition 1, batch 1" in str(refused) and "names none" in str(refused)
    assert isinstance(transactional_refusal(anonymous_context(), partitions(batch(transactional=True)), ""), TransactionalBatchWithoutIdError)
    assert transactional_refusal(writer, partitions(batch(transactional=False)), "") is None


def test_the_id_needs_write_on_the_callers_own_transactional_id() -> None:
    assert transactional_refusal(client("tn-a", "app"), partitions(batch(transactional=True)), "app") is None
    refused = transactional_refusal(client("tn-a", "app"), partitions(batch(transactional=True)), "other")
    assert isinstance(refused, TransactionalIdAuthorizationError) and str(refused) == "not authorized to use transactional id 'other'"


def test_a_binding_of_another_tenant_does_not_reach_this_tenants_id() -> None:
    """Each call carries only its own tenant's bindings: tn-b's binding on "other" switches tn-b to Kafka's rule."""
    assert isinstance(transactional_refusal(client("tn-b", "other"), partitions(batch(transactional=True)), "app"), TransactionalIdAuthorizationError)


def test_a_plain_request_without_an_id_and_trusted_callers_naming_one_are_not_checked() -> None:
    assert transactional_refusal(client("tn-a"), partitions(batch(transactional=False)), "") is None
    assert transactional_refusal(anonymous_context(), partitions(batch(transactional=True)), "anything") is None


def test_the_id_is_authorized_once_per_request() -> None:
    writer = client("tn-a", "app")
    asked: list[tuple[Operation, ResourceType, str]] = []

    class Counting:
        kind, acls, principal = writer.kind, writer.acls, writer.principal

        def may(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
            asked.append((operation, resource_type, name))
            return writer.may(operation, resource_type, name)

    assert transactional_refusal(Counting(), partitions(*(batch(transactional=True) for _ in range(5))), "app") is None  # type: ignore[arg-type]
    assert asked == [(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, "app")]


def test_a_principal_no_transactional_id_binding_names_keeps_the_topic_rule() -> None:
    """Weir's migration rule (security.transactional_ids): WRITE on some topic is enough until a binding names the principal."""
    assert transactional_refusal(client("tn-a"), partitions(batch(transactional=True)), "app") is None
