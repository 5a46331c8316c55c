"""The transactional producer's transaction manager: librdkafka's transaction states over Weir's gRPC RPCs.

A producer with ``transactional.id`` owns one :class:`TransactionManager`. The application
drives it through the Producer's calls; the sender thread asks it which partitions are in
the transaction, adds new ones, and reports failed batches::

    INIT --init_transactions()--> READY --begin_transaction()--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction()--> COMMITTING --(flush, EndTxn commit)--> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort_transaction()--> ABORTING --(purge, EndTxn abort)--> READY
    IN_TRANSACTION / COMMITTING --a batch or partition failed--> ABORTABLE_ERROR
    any --fenced, not authorized--> FATAL_ERROR (the producer is unusable)

What librdkafka does, and so this does:

- init_transactions() finds the id's transaction coordinator (FindCoordinator, key type
  TRANSACTION) and asks it InitProducerId with ``transaction.timeout.ms``; that fences any
  older producer of the id (its open transaction is aborted).
- A partition joins the transaction (AddPartitionsToTxn) as soon as it gets its first record,
  while the application goes on producing and the batch lingers; the sender holds the
  partition's batches until it has joined. The request leaves from produce() itself
  (:meth:`TransactionManager.note_record`, asynchronous: a gRPC future whose answer wakes the
  sender), not from the sender thread, which a busy produce() loop keeps from running for up to
  Python's thread switch interval (5 ms); the sender starts it for the partitions produce()
  could not name (:meth:`TransactionManager.add_partitions_soon`) and after a retriable
  failure. One AddPartitionsToTxn is in flight at a time (the coordinator answers a second one
  CONCURRENT_TRANSACTIONS), and EndTxn waits for it, so that no partition joins after the end.
- commit_transaction() flushes first, then sends EndTxn; a transaction that wrote nothing
  ends locally. abort_transaction() purges what was not sent (delivery reports with
  ``_PURGE_QUEUE``), waits for what is in flight, then sends EndTxn. EndTxn answers the
  producer epoch to use next (bumped at every commit and abort, KIP-890); sequence numbers
  restart at 0 with it.
- Errors are KafkaError with librdkafka's flags: a call that ran out of time is
  ``retriable()`` (``_TIMED_OUT``; call it again to resume); a failed produce, a partition or
  group that could not be added, or a refused TxnOffsetCommit make the transaction
  ``txn_requires_abort()`` (abort_transaction(), then start again); being fenced by a newer
  producer of the id (``_FENCED``) or refused the transactional id is ``fatal()``. A call out
  of order raises ``_STATE``, as does produce() outside a transaction.

Where this differs: produce() in the abortable state raises the abortable error at once
(librdkafka accepts the record and purges it at abort), so that the application learns early.

Thread-safety: every method may be called from any thread; the application's calls are
expected one at a time (as librdkafka requires).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import Any

import grpc

from grpc_protos.weir.v1 import broker_pb2
from weir.client_logging import ClientLog
from weir.cluster import Cluster, error_from_rpc
from weir.commit_metadata import encode_commit_metadata
from weir.coordinator import COORDINATOR_LOADING, COORDINATOR_MOVED, GroupCoordinators
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.group_metadata import ConsumerGroupMetadata
from weir.message import TopicPartition
from weir.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

Partition = tuple[str, int]

# A timeout of None or below 0 means "no limit"; coordinator calls still need a number.
_NO_LIMIT = 365 * 24 * 3600.0
# Coordinator answers after which the same call is made again (after a backoff, the
# coordinator looked up again when it moved), within the caller's timeout.
_RETRIED = COORDINATOR_MOVED | COORDINATOR_LOADING | {ErrorCode.CONCURRENT_TRANSACTIONS}
# Answers that mean a newer producer of the transactional id took over (librdkafka's _FENCED).
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
# Other answers after which the producer cannot go on.
_FATAL = frozenset(
    {
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    }
)


class TransactionState(enum.Enum):
    INIT = "Init"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    COMMITTING = "CommittingTransaction"
    ABORTING = "AbortingTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


def _deadline(timeout: float | None) -> float:
    return time.monotonic() + (_NO_LIMIT if timeout is None or timeout < 0 else timeout)


def _answer_retry_code(response: Any) -> tuple[int, str]:
    """The error of an answer with one error code when the call should be made again, else (0, "")."""
    if response.error_code in _RETRIED:
        return response.error_code, response.error_message
    return 0, ""


def _partition_retry_code(response: Any) -> tuple[int, str]:
    """The first per-partition error of an answer when the call should be made again, else (0, "")."""
    for topic in response.topics:
        for partition in topic.partitions:
            if partition.error_code in _RETRIED:
                return partition.error_code, partition.error_message
    return 0, ""


def _state_error(message: str) -> KafkaException:
    return KafkaException(KafkaError(KafkaError._STATE, message))


class TransactionManager:
    """The transaction state of one transactional producer (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        transactional_id: str,
        *,
        transaction_timeout_ms: int,
        request_timeout: float,
        report_error: Callable[[KafkaError], None],
        wake_sender: Callable[[], None] = lambda: None,
        log: ClientLog | None = None,
    ) -> None:
        """``wake_sender``: called once an AddPartitionsToTxn answered (the partitions' batches may go);
        ``log``: the client's log (debug context ``eos``: the transactional requests sent and answered)."""
        self.transactional_id = transactional_id
        self._cluster = cluster
        self._wake_sender = wake_sender
        self._log = log if log is not None else ClientLog(None, transactional_id)
        self._timeout_ms = transaction_timeout_ms
        self._request_timeout = request_timeout
        self._report_error = report_error
        self._coordinators = GroupCoordinators(cluster, key_type=broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION)
        self._group_coordinators = GroupCoordinators(cluster)
        self._lock = threading.Lock()
        self._state = TransactionState.INIT
        self._error: KafkaError | None = None  # the abortable or fatal error, in those states
        self._producer_id = NO_PRODUCER_ID
        self._producer_epoch = NO_PRODUCER_EPOCH
        self._partitions: set[Partition] = set()
        self._offsets_added = False
        # The partitions of the AddPartitionsToTxn in flight (empty: none), notified when it ends.
        self._adding: frozenset[Partition] = frozenset()
        self._add_ended = threading.Condition(self._lock)
        # After a retriable AddPartitionsToTxn failure: no new one before this monotonic time.
        self._next_add_attempt = 0.0
        self._add_failures = 0
        # Counts the ended transactions: an answer of an earlier transaction's AddPartitionsToTxn changes nothing.
        self._transaction_number = 0

    # ------------------------------------------------------------------ state

    @property
    def state(self) -> TransactionState:
        return self._state

    def producer(self) -> tuple[int, int]:
        """The producer id and epoch batches are sent with ((-1, -1) before init_transactions())."""
        with self._lock:
            return self._producer_id, self._producer_epoch

    def contains(self, partition: Partition) -> bool:
        """Whether ``partition`` was added to the current transaction (its batches may be sent)."""
        return partition in self._partitions

    @property
    def failed(self) -> bool:
        """True in the abortable or fatal state: nothing more is sent until the transaction is aborted."""
        return self._error is not None

    def check_may_produce(self) -> None:
        """Raise unless produce() may queue a record now: only inside a transaction (librdkafka's _STATE)."""
        state = self._state
        if state is TransactionState.IN_TRANSACTION:
            return
        self._raise_if_failed()
        raise _state_error(f"Local: Erroneous state: the producer is not in a transaction (state {state.value}): call begin_transaction() first")

    def _raise_if_failed(self) -> None:
        error = self._error
        if error is not None:
            raise KafkaException(error)

    def _require(self, operation: str, *states: TransactionState) -> None:
        """Raise the fatal or abortable error, or _STATE, unless the state is one of ``states``. Holds the lock."""
        if self._state is TransactionState.FATAL_ERROR or (self._state is TransactionState.ABORTABLE_ERROR and TransactionState.ABORTABLE_ERROR not in states):
            self._raise_if_failed()
        if self._state not in states:
            raise _state_error(f"Local: Erroneous state: {operation} is not allowed in state {self._state.value}")

    def _fail(self, error: KafkaError) -> KafkaError:
        """Enter the fatal state for a fenced or refused producer, the abortable state for another failure inside a transaction; returns the error as raised."""
        code = error.code()
        with self._lock:
            if code in _FENCED or code in _FATAL or code == KafkaError._FENCED:
                if code in _FENCED:
                    error = KafkaError(KafkaError._FENCED, f"Local: This instance has been fenced by a newer instance: {error.str()}", fatal=True)
                else:
                    error = KafkaError(code, error.str(), fatal=True)
                first = self._state is not TransactionState.FATAL_ERROR
                self._state = TransactionState.FATAL_ERROR
                self._error = error
            elif self._state in (TransactionState.IN_TRANSACTION, TransactionState.COMMITTING, TransactionState.ABORTABLE_ERROR):
                error = KafkaError(code, error.str(), retriable=False, txn_requires_abort=True)
                first = False
                if self._state is not TransactionState.ABORTABLE_ERROR:
                    self._state = TransactionState.ABORTABLE_ERROR
                    self._error = error
            else:
                first = False  # outside a transaction (init, abort): the call fails, the state stays
        if first:
            self._report_error(KafkaError(KafkaError._FATAL, f"Fatal error: {error.name()}: {error.str()}", fatal=True))
        return error

    @staticmethod
    def _timed_out(error: KafkaError, operation: str) -> KafkaException:
        """A coordinator call that ran out of time: retriable _TIMED_OUT naming the last error (call again to resume)."""
        return KafkaException(KafkaError(KafkaError._TIMED_OUT, f"{operation} timed out: {error.str()}", retriable=True))

    def _call(self, method: str, request: Any, deadline: float, retry_code: Callable[[Any], tuple[int, str]], operation: str) -> Any:
        """``method`` at the transaction coordinator, made again after moved/loading/concurrent answers until ``deadline``."""
        try:
            return self._coordinators.call(self.transactional_id, method, request, timeout=max(deadline - time.monotonic(), 0.001), error_of=retry_code)
        except KafkaException as exception:
            if exception.error.retriable():
                raise self._timed_out(exception.error, operation) from None
            raise KafkaException(self._fail(exception.error)) from None

    # ------------------------------------------------------------------ the application's calls

    def init(self, timeout: float | None) -> None:
        """init_transactions(): the producer id and epoch from the coordinator, fencing older producers of the id."""
        with self._lock:
            self._require("init_transactions()", TransactionState.INIT)
        request = broker_pb2.InitProducerIdRequest(
            transactional_id=self.transactional_id, transaction_timeout_ms=self._timeout_ms, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH
        )
        response = self._call("InitProducerId", request, _deadline(timeout), _answer_retry_code, "init_transactions()")
        if response.error_code:
            raise KafkaException(
                self._fail(KafkaError(response.error_code, f"InitProducerId: {response.error_message or KafkaError(response.error_code).str()}"))
            )
        with self._lock:
            self._producer_id, self._producer_epoch = response.producer_id, response.producer_epoch
            self._state = TransactionState.READY

    def begin(self) -> None:
        """begin_transaction(): local only; the coordinator learns of it from the first AddPartitionsToTxn."""
        with self._lock:
            self._require("begin_transaction()", TransactionState.READY)
            self._state = TransactionState.IN_TRANSACTION

    def commit(self, flush: Callable[[float | None, Callable[[], bool]], int], timeout: float | None) -> None:
        """commit_transaction(): flush every record of the transaction, then EndTxn commit.

        ``flush(timeout, stop)`` delivers what is queued and returns how many records are left;
        ``stop`` ends it early when the transaction fails meanwhile.
        """
        deadline = _deadline(timeout)
        with self._lock:
            self._require("commit_transaction()", TransactionState.IN_TRANSACTION, TransactionState.COMMITTING)
            self._state = TransactionState.COMMITTING
        left = flush(None if timeout is None or timeout < 0 else max(deadline - time.monotonic(), 0.0), lambda: self._error is not None)
        self._raise_if_failed()  # a record of the transaction failed: it can only be aborted
        if left:
            raise KafkaException(
                KafkaError(KafkaError._TIMED_OUT, f"commit_transaction() timed out: {left} record(s) not delivered yet; call it again", retriable=True)
            )
        self._end(commit=True, deadline=deadline)

    def abort(self, purge: Callable[[float | None], int], timeout: float | None) -> None:
        """abort_transaction(): purge what was not sent, wait for what is in flight, then EndTxn abort."""
        deadline = _deadline(timeout)
        with self._lock:
            self._require("abort_transaction()", TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR, TransactionState.ABORTING)
            self._state = TransactionState.ABORTING
            self._error = None
        left = purge(None if timeout is None or timeout < 0 else max(deadline - time.monotonic(), 0.0))
        if left:
            raise KafkaException(
                KafkaError(KafkaError._TIMED_OUT, f"abort_transaction() timed out: {left} record(s) still in flight; call it again", retriable=True)
            )
        self._end(commit=False, deadline=deadline)

    def _end(self, *, commit: bool, deadline: float) -> None:
        operation = "commit_transaction()" if commit else "abort_transaction()"
        with self._lock:
            # A partition must not join after EndTxn (nor its answer be lost): the add in flight ends first.
            if not self._add_ended.wait_for(lambda: not self._adding, timeout=max(deadline - time.monotonic(), 0.0)):
                raise KafkaException(
                    KafkaError(KafkaError._TIMED_OUT, f"{operation} timed out: AddPartitionsToTxn still in flight; call it again", retriable=True)
                )
            wrote = bool(self._partitions) or self._offsets_added
            producer_id, producer_epoch = self._producer_id, self._producer_epoch
        if wrote:
            request = broker_pb2.EndTxnRequest(transactional_id=self.transactional_id, producer_id=producer_id, producer_epoch=producer_epoch, committed=commit)
            self._log.debug("eos", "ENDTXN", "Sent EndTxnRequest (%s, producer id %d, epoch %d)", "commit" if commit else "abort", producer_id, producer_epoch)
            response = self._call("EndTxn", request, deadline, _answer_retry_code, operation)
            self._log.debug("eos", "ENDTXN", "Received EndTxnResponse (error %d)", response.error_code)
            if response.error_code:
                raise KafkaException(self._fail(KafkaError(response.error_code, f"EndTxn: {response.error_message or KafkaError(response.error_code).str()}")))
            producer_id, producer_epoch = response.producer_id, response.producer_epoch
        with self._lock:
            # KIP-890: the epoch is bumped at every end; the sender numbers the next batches from 0 under it.
            self._producer_id, self._producer_epoch = producer_id, producer_epoch
            self._partitions = set()
            self._offsets_added = False
            self._transaction_number += 1
            self._next_add_attempt = 0.0
            self._add_failures = 0
            self._state = TransactionState.READY

    def send_offsets(self, offsets: Sequence[TopicPartition], group_metadata: ConsumerGroupMetadata, timeout: float | None) -> None:
        """send_offsets_to_transaction(): the group joins the transaction (AddOffsetsToTxn), then its offsets are committed in it (TxnOffsetCommit)."""
        with self._lock:
            self._require("send_offsets_to_transaction()", TransactionState.IN_TRANSACTION)
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "group_metadata must come from Consumer.consumer_group_metadata()"))
        valid = [tp for tp in offsets if tp.offset >= 0]
        if not valid:
            return  # as librdkafka: no offset to commit is no error
        deadline = _deadline(timeout)
        producer_id, producer_epoch = self.producer()
        add = broker_pb2.AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id, producer_id=producer_id, producer_epoch=producer_epoch, group_id=group_metadata.group_id
        )
        response = self._call("AddOffsetsToTxn", add, deadline, _answer_retry_code, "send_offsets_to_transaction()")
        if response.error_code:
            raise KafkaException(
                self._fail(KafkaError(response.error_code, f"AddOffsetsToTxn: {response.error_message or KafkaError(response.error_code).str()}"))
            )
        with self._lock:
            self._offsets_added = True
        self._commit_offsets(valid, group_metadata, producer_id, producer_epoch, deadline)

    def _commit_offsets(self, offsets: list[TopicPartition], group: ConsumerGroupMetadata, producer_id: int, producer_epoch: int, deadline: float) -> None:
        by_topic: dict[str, list[broker_pb2.TxnOffsetCommitPartition]] = {}
        for tp in offsets:
            by_topic.setdefault(tp.topic, []).append(
                broker_pb2.TxnOffsetCommitPartition(
                    partition=tp.partition,
                    committed_offset=tp.offset,
                    committed_leader_epoch=tp.leader_epoch if tp.leader_epoch is not None else -1,
                    metadata=encode_commit_metadata(tp.metadata),
                )
            )
        request = broker_pb2.TxnOffsetCommitRequest(
            transactional_id=self.transactional_id,
            group_id=group.group_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            generation_id=group.generation_id,
            member_id=group.member_id,
            group_instance_id=group.group_instance_id or "",
            topics=[broker_pb2.TxnOffsetCommitTopic(topic=topic, partitions=partitions) for topic, partitions in by_topic.items()],
        )
        try:
            response = self._group_coordinators.call(
                group.group_id, "TxnOffsetCommit", request, timeout=max(deadline - time.monotonic(), 0.001), error_of=_partition_retry_code
            )
        except KafkaException as exception:
            if exception.error.retriable():
                raise self._timed_out(exception.error, "send_offsets_to_transaction()") from None
            raise KafkaException(self._fail(exception.error)) from None
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error_code:
                    reason = f"TxnOffsetCommit of {topic.topic} [{partition.partition}]: {partition.error_message or KafkaError(partition.error_code).str()}"
                    raise KafkaException(self._fail(KafkaError(partition.error_code, reason)))

    # ------------------------------------------------------------------ the sender's calls

    def missing(self, partitions: Iterable[Partition]) -> list[Partition]:
        """Those of ``partitions`` not in the transaction yet (their batches wait until they joined)."""
        return [partition for partition in partitions if partition not in self._partitions]

    def note_record(self, topic: str, partition: int | None) -> None:
        """produce() put a record in ``partition`` of ``topic`` (None: not known): have the partition join the transaction now.

        Cheap when it is in the transaction or being added; otherwise starts AddPartitionsToTxn
        without waiting for anything (:meth:`add_partitions_soon`, never blocking).
        """
        if partition is None:
            return
        key = (topic, partition)
        if key in self._partitions or key in self._adding:
            return
        self.add_partitions_soon([key], may_block=False)

    def add_partitions_soon(self, partitions: Iterable[Partition], *, may_block: bool) -> None:
        """Start one AddPartitionsToTxn for those of ``partitions`` not in the transaction; its answer wakes the sender.

        Does nothing while another is in flight, after a retriable failure until its backoff
        ended, or outside a transaction that may still write. ``may_block`` False (produce()):
        nothing is started unless the coordinator's address is known (the sender asks again).
        A non-retriable failure moves the transaction to the abortable or fatal state.
        """
        with self._lock:
            if self._adding or self._error is not None or self._state not in (TransactionState.IN_TRANSACTION, TransactionState.COMMITTING):
                return
            if time.monotonic() < self._next_add_attempt:
                return
            wanted = sorted({partition for partition in partitions if partition not in self._partitions})
            if not wanted:
                return
            address = self._coordinators.cached_address(self.transactional_id)
            if address is None and not may_block:
                return
            self._adding = frozenset(wanted)
            number = self._transaction_number
            producer_id, producer_epoch = self._producer_id, self._producer_epoch
        try:
            if address is None:
                address = self._coordinators.address(self.transactional_id, timeout=self._request_timeout)
            by_topic: dict[str, list[int]] = {}
            for topic, partition in wanted:
                by_topic.setdefault(topic, []).append(partition)
            request = broker_pb2.AddPartitionsToTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                topics=[broker_pb2.TopicPartitions(topic=topic, partitions=ids) for topic, ids in by_topic.items()],
            )
            future = self._cluster.stub(address).AddPartitionsToTxn.future(request, timeout=self._request_timeout, metadata=self._cluster.call_metadata)
        except KafkaException as exception:
            self._add_ended_with(number, [], exception.error)
            return
        self._log.debug("eos", "ADDPARTS", "Sent AddPartitionsToTxnRequest for %d partition(s) to %s", len(wanted), address)
        called = address
        future.add_done_callback(lambda done: self._add_answered(number, called, done))

    def _add_answered(self, number: int, address: str, future: Future[Any]) -> None:
        """An AddPartitionsToTxn answered (on a gRPC thread): the added partitions join, an error is handled, the sender is woken."""
        try:
            response = future.result()
        except grpc.RpcError as rpc_error:
            error = error_from_rpc(rpc_error, f"AddPartitionsToTxn to {address}")
            self._cluster.note_failure(address, error)
            if error.retriable():
                self._coordinators.forget(self.transactional_id, address)
            self._add_ended_with(number, [], error)
            return
        except Exception as unexpected:  # a cancelled future (the producer closed): retried if ever needed
            self._add_ended_with(number, [], KafkaError(KafkaError._TRANSPORT, f"AddPartitionsToTxn to {address}: {unexpected!r}"))
            return
        self._cluster.note_answer(address)
        self._log.debug("eos", "ADDPARTS", "Received AddPartitionsToTxnResponse from %s", address)
        added: list[Partition] = []
        refused: KafkaError | None = None
        for topic in response.topics:
            for result in topic.partitions:
                if result.error_code == 0:
                    added.append((topic.topic, result.partition))
                elif result.error_code != ErrorCode.OPERATION_NOT_ATTEMPTED and refused is None:
                    message = result.error_message or KafkaError(result.error_code).str()
                    refused = KafkaError(result.error_code, f"AddPartitionsToTxn of {topic.topic} [{result.partition}]: {message}")
                    if result.error_code in COORDINATOR_MOVED:
                        self._coordinators.forget(self.transactional_id, address)
        self._add_ended_with(number, added, refused)

    def _add_ended_with(self, number: int, added: list[Partition], error: KafkaError | None) -> None:
        """The AddPartitionsToTxn of transaction ``number`` ended: ``added`` joined; ``error`` (if any) retried after a backoff or failing the transaction."""
        retry = error is not None and (error.retriable() or error.code() in _RETRIED)
        with self._lock:
            self._adding = frozenset()
            current = number == self._transaction_number
            if current:
                self._partitions.update(added)
            if retry:
                self._next_add_attempt = time.monotonic() + self._cluster.backoff(self._add_failures)
                self._add_failures += 1
            elif error is None:
                self._add_failures = 0
            self._add_ended.notify_all()
        if error is not None and not retry and current:
            self._fail(error)
        self._wake_sender()

    def next_add_in(self) -> float:
        """Seconds until a retried AddPartitionsToTxn may be started (0: now)."""
        return max(self._next_add_attempt - time.monotonic(), 0.0)

    def produce_failed(self, error: KafkaError) -> None:
        """A batch of the transaction failed for good: the transaction can only be aborted (fatal when fenced)."""
        if error.code() in (KafkaError._PURGE_QUEUE, KafkaError._DESTROY):
            return  # purged by abort_transaction() or close(): not a failure of the transaction
        self._fail(error)
