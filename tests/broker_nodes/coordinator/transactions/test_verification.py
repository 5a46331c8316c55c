"""The partition leader's side of KIP-890 verification: which transactional batches it asks the coordinator about, and which it refuses itself."""

from __future__ import annotations

from broker_nodes.cluster_state import BrokerEndpoint
from broker_nodes.coordinator.transactions.errors import TransactionVerificationUnavailableError
from broker_nodes.coordinator.transactions.verification import TransactionVerifier
from weir.records import RecordBatchBuilder

TXN = "t~app"


class AskedCoordinator:
    """Answers every partition as in the transaction, and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, list[tuple[str, int]]]] = []

    def verify_partitions(self, transactional_id, producer_id, producer_epoch, partitions):  # type: ignore[no-untyped-def]
        self.asked.append((producer_epoch, list(partitions)))
        return dict.fromkeys(partitions)


def _batch(epoch: int) -> bytes:
    builder = RecordBatchBuilder(producer_id=7, producer_epoch=epoch, base_sequence=0, transactional=True)
    builder.append(0, b"k", b"v")
    return builder.build()


def _verifier(open_epochs: dict[tuple[str, int], int], coordinator: AskedCoordinator) -> TransactionVerifier:
    return TransactionVerifier(
        lambda: BrokerEndpoint(1, "127.0.0.1", 1),
        lambda: None,  # standalone: this broker coordinates every id
        coordinator,  # type: ignore[arg-type]
        open_transaction_epoch=lambda topic, partition, producer_id: open_epochs.get((topic, partition)),
        channel_factory=lambda address: None,  # type: ignore[arg-type, return-value]
        internal_token="token",
    )


def test_a_batch_of_a_later_epoch_waits_for_the_marker_of_the_transaction_still_open_in_its_partition():
    """The earlier transaction's marker would end the batch with it: refused (retriable) without asking the coordinator."""
    coordinator = AskedCoordinator()
    verifier = _verifier({("t~a", 0): 4}, coordinator)
    refused = verifier.refused_entries(TXN, [("t~a", 0, _batch(5)), ("t~b", 0, _batch(5)), ("t~a", 0, _batch(4))])
    assert set(refused) == {0}
    assert isinstance(refused[0], TransactionVerificationUnavailableError) and refused[0].retriable
    # The partition with no open transaction is verified; the batch of the open transaction's own epoch needs no verification.
    assert coordinator.asked == [(5, [("t~b", 0)])]
