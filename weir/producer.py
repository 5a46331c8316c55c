"""``Producer``: confluent-kafka's producer API over Weir's gRPC data plane.

produce() encodes the record into its partition's open batch (see producer_accumulator);
a background thread sends ready batches (see producer_sender); poll() and flush() run
delivery callbacks in the caller's thread, as confluent-kafka does.

Behaviour worth knowing, where a choice had to be made:

- The first produce() to a topic fetches its metadata synchronously (as Kafka's Java client
  does), trying every broker of ``bootstrap.servers`` (and those it learns of) for up to
  ``max.block.ms``; if none answers by then produce() raises KafkaException ``_TRANSPORT``
  naming the addresses tried. Later calls use the cache, which the sender thread keeps fresh
  (after leader changes and every ``metadata.max.age.ms``); a partition whose leader is
  unknown or gone keeps its records until metadata names a new one (see producer_sender).
- A topic the brokers do not know is not an exception: the record fails through its
  delivery callback with ``_UNKNOWN_TOPIC`` (metadata for it is asked again at most every
  ``retry.backoff.max.ms``, so a topic created meanwhile is found).
- An explicit partition beyond the topic's partition count raises KafkaException
  ``_UNKNOWN_PARTITION`` from produce(), as librdkafka does once it has the topic's
  metadata; the first record for a topic fails through its delivery callback instead (as
  librdkafka's, queued before metadata arrived).
- A record larger than ``message.max.bytes`` raises KafkaException ``MSG_SIZE_TOO_LARGE``.
- When ``buffer.memory`` is full, produce() blocks up to ``max.block.ms`` for room, then
  raises ``BufferError`` (confluent-kafka's type for a full queue).
- ``queue.buffering.max.messages`` / ``queue.buffering.max.kbytes``, when set, make produce()
  raise BufferError at once beyond them, as librdkafka does; ``delivery.report.only.error``
  calls delivery callbacks only for failed records.
- The first metadata request for a topic asks the broker to create it when
  ``allow.auto.create.topics`` is true (the producer's default) and the broker allows it.
- ``stats_cb`` gets librdkafka-shaped statistics (weir.statistics) every
  ``statistics.interval.ms`` and ``throttle_cb`` a ThrottleEvent when a broker delayed an
  answer for the tenant's quota, both from poll(), as error_cb.
- With ``transactional.id`` the producer is transactional (init_transactions(),
  begin_transaction(), send_offsets_to_transaction(), commit_transaction(),
  abort_transaction(), as confluent-kafka's; see producer_transactions), and produce()
  outside a transaction raises KafkaException ``_STATE``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from weir import records
from weir.cluster import Cluster, ClusterMetadata, TopicInfo
from weir.config import PRODUCER, ClientConfig
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.group_metadata import ConsumerGroupMetadata
from weir.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message, ThrottleEvent, TopicPartition
from weir.partitioner import Partitioner, StickyPartitions
from weir.producer_accumulator import Deliveries, ProducerBatch, RecordAccumulator
from weir.producer_sender import Sender
from weir.producer_transactions import TransactionManager
from weir.records import COMPRESSION_CODECS
from weir.statistics import ClientCounters, StatisticsSource, StatisticsTimer, statistics_json

# How long a topic the brokers did not know stays "unknown" before produce() asks again.
_UNKNOWN_TOPIC_RECHECK = 1.0
# Per-header bound of the encoding beyond name and value (varints).
_HEADER_OVERHEAD = 10

# A queued delivery report: (topic, partition, deliveries, record count, error, base offset,
# log append time). The record count includes records produced without a callback.
_Report = tuple[str, int, Deliveries, int, KafkaError | None, int, int]


def _to_bytes(data: Any, what: str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"{what} must be bytes or str, not {type(data).__name__}")


def normalize_headers(headers: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> tuple[list[tuple[str, bytes | None]], int]:
    """Headers given as a dict or as (name, value) pairs -> a list of (str, bytes | None) and its size bound."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    normalized = []
    size = 0
    for name, value in pairs:
        if not isinstance(name, str):
            raise TypeError(f"header names must be str, not {type(name).__name__}")
        encoded = None if value is None else _to_bytes(value, f"header {name!r}")
        normalized.append((name, encoded))
        size += len(name) * 4 + (len(encoded) if encoded is not None else 0) + _HEADER_OVERHEAD
    return normalized, size


def _topic_error(topic: str, info: TopicInfo) -> KafkaError:
    """The delivery error of a record whose topic's metadata carries an error."""
    if info.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return KafkaError(KafkaError._UNKNOWN_TOPIC, f"Local: Unknown topic: {topic}: {info.error_message or 'the brokers do not know this topic'}")
    return KafkaError(info.error_code, info.error_message or None)


class Producer:
    """A thread-safe Kafka-style producer (see the module docstring for its behaviour)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        merged = dict(config or {})
        merged.update(options)
        self._config = ClientConfig(merged, PRODUCER)
        config_values = self._config
        self._cluster = Cluster(config_values)
        sticky = StickyPartitions(per_record=config_values["sticky.partitioning.linger.ms"] == 0)
        self._partitioner = Partitioner(config_values["partitioner"], sticky)
        self._accumulator = RecordAccumulator(
            batch_size=config_values["batch.size"],
            batch_max_records=config_values["batch.num.messages"],
            linger_ms=config_values["linger.ms"],
            buffer_memory=config_values["buffer.memory"],
            codec=COMPRESSION_CODECS[config_values["compression.type"]],
            transactional=bool(config_values["transactional.id"]),
            sticky=self._partitioner.sticky,
        )
        self._on_delivery: Callable[..., Any] | None = config_values["on_delivery"]
        self._error_callback: Callable[[KafkaError], Any] | None = config_values["error_cb"]
        self._message_max_bytes = config_values["message.max.bytes"]
        self._max_block = config_values["max.block.ms"] / 1000.0
        self._events = threading.Condition()
        self._reports: deque[_Report] = deque()
        self._errors: deque[KafkaError] = deque()
        self._transactions: TransactionManager | None = None
        if config_values["transactional.id"]:
            self._transactions = TransactionManager(
                self._cluster,
                config_values["transactional.id"],
                transaction_timeout_ms=config_values["transaction.timeout.ms"],
                request_timeout=config_values["request.timeout.ms"] / 1000.0,
                report_error=self._sender_error,
                wake_sender=self._accumulator.wake,
                log=config_values.log,
            )
        self._only_errors: bool = config_values["delivery.report.only.error"]
        self._max_messages: int | None = config_values["queue.buffering.max.messages"] if config_values.is_set("queue.buffering.max.messages") else None
        self._max_bytes: int | None = config_values["queue.buffering.max.kbytes"] * 1024 if config_values.is_set("queue.buffering.max.kbytes") else None
        self._auto_create: bool = config_values["allow.auto.create.topics"]
        self._stats_callback: Callable[[str], Any] | None = config_values["stats_cb"]
        self._throttle_callback: Callable[[ThrottleEvent], Any] | None = config_values["throttle_cb"]
        self._stats_timer = StatisticsTimer(config_values["statistics.interval.ms"] if self._stats_callback is not None else 0)
        self._counters = ClientCounters()
        self._throttles: deque[ThrottleEvent] = deque()
        self._started = time.monotonic()
        self._sender = Sender(
            self._accumulator,
            self._cluster,
            config_values,
            self._batch_done,
            self._sender_error,
            self._transactions,
            counters=self._counters,
            report_throttle=self._throttled if self._throttle_callback is not None else None,
        )
        self._sender.start()
        self._closed = False
        self._fast_path = self._install_fast_path(config_values)

    def _install_fast_path(self, config_values: ClientConfig) -> bool:
        """Let weir._records_native's StickyAppender take produce() of records without headers whose
        partition's batch is armed (see weir.producer_accumulator); False when it cannot apply.

        It applies when such records need no per-record check beyond the partition: no
        transactions, no queue.buffering.max.* limits, sticky batches (with
        sticky.partitioning.linger.ms=0 each keyless record would be armed for in vain), and
        Producer.produce itself (a subclass's produce() stays in charge). The appender chooses the
        partition as produce() does: the explicit one, else the key's under the configured
        partitioner, else the sticky one.
        """
        native = records._native
        if (
            native is None
            or self._transactions is not None
            or self._max_messages is not None
            or self._max_bytes is not None
            or self._partitioner.sticky.per_record
            or type(self).produce is not Producer.produce
        ):
            return False
        appender = native.StickyAppender(
            Producer.produce.__get__(self, type(self)),  # the Python path, for every record the appender declines
            self._cluster,
            self._accumulator.lock,
            self._accumulator._close_armed,
            self._on_delivery,
            self._message_max_bytes,
            config_values["batch.size"],
            config_values["batch.num.messages"],
            config_values["buffer.memory"],
            *self._partitioner.native_hash,
        )
        self._accumulator.attach_appender(appender)
        # An instance attribute before the class's method: produce() runs in C from here on.
        vars(self)["produce"] = appender.produce
        return True

    # ------------------------------------------------------------------ produce

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        on_delivery: Callable[..., Any] | None = None,
        callback: Callable[..., Any] | None = None,
        timestamp: int = 0,
        headers: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
    ) -> None:
        """Queue one record; its delivery callback runs later from poll() or flush().

        Raises BufferError when buffer.memory stays full for max.block.ms, and
        KafkaException for a record above message.max.bytes or a partition out of range, and
        (transactional producers) _STATE outside a transaction.
        """
        if self._transactions is not None:
            self._transactions.check_may_produce()
        if value is not None and value.__class__ is not bytes:
            value = _to_bytes(value, "value")
        if key is not None and key.__class__ is not bytes:
            key = _to_bytes(key, "key")
        size = (0 if value is None else len(value)) + (0 if key is None else len(key))
        if headers:
            headers, header_size = normalize_headers(headers)
            size += header_size
        else:
            headers = None
        self._check_queue_room(size)
        if size > self._message_max_bytes:
            raise KafkaException(
                KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"Broker: Message size too large: {size} bytes exceeds message.max.bytes ({self._message_max_bytes})")
            )
        info = self._cluster.topics.get(topic)
        first_look = info is None
        if info is None or info.error_code:
            info = self._topic_info(topic, info)
        delivery = on_delivery or callback or self._on_delivery
        if not timestamp:
            timestamp = time.time_ns() // 1_000_000
        if info.error_code:
            self._fail_now(topic, partition, _topic_error(topic, info), delivery, key, value, headers, timestamp)
            return
        partition_count = info.partition_count
        if partition < 0:
            partition = self._partitioner.keyed_partition(key, partition_count)
        elif partition >= partition_count:
            error = KafkaError(KafkaError._UNKNOWN_PARTITION, f"Local: Unknown partition: {topic} has {partition_count} partitions, not partition {partition}")
            if first_look:
                # librdkafka queues a record for a topic it has no metadata for yet and fails it
                # through its delivery report once metadata shows the partition does not exist.
                self._fail_now(topic, partition, error, delivery, key, value, headers, timestamp)
                return
            raise KafkaException(error)
        self._accumulator.append(
            topic, partition, partition_count, timestamp, key, value, headers, delivery, size, self._max_block, info if self._fast_path else None
        )
        if self._transactions is not None:
            # The partition joins the transaction now, while the application goes on producing
            # (a keyless record's is the sticky one it went to, in all but the case where its batch just filled).
            self._transactions.note_record(topic, partition if partition >= 0 else self._partitioner.sticky.current(topic))

    def _check_queue_room(self, size: int) -> None:
        """librdkafka's queue.buffering.max.messages / kbytes (when set): BufferError at once when full."""
        if self._max_messages is not None and len(self) >= self._max_messages:
            raise BufferError(f"Local: Queue full: {len(self)} records await delivery (queue.buffering.max.messages={self._max_messages})")
        if self._max_bytes is not None and self._accumulator.buffered_bytes + size > self._max_bytes:
            raise BufferError(f"Local: Queue full: queue.buffering.max.kbytes ({self._max_bytes // 1024}) would be exceeded")

    def _topic_info(self, topic: str, cached: TopicInfo | None) -> TopicInfo:
        """Metadata of ``topic`` for produce(): fetched when new or unknown to the brokers for a while.

        Raises KafkaException when no broker answered within max.block.ms and nothing is cached.
        """
        if cached is not None and time.monotonic() - cached.fetched_at < _UNKNOWN_TOPIC_RECHECK:
            return cached
        deadline = time.monotonic() + self._max_block
        attempt = 0
        while True:  # ends at the deadline, or at the first answer that is not a topic being created
            try:
                # With something cached, one round over the brokers is enough: produce() must not
                # block for long on a topic it already reports as unknown.
                self._cluster.refresh(
                    [topic], timeout=max(deadline - time.monotonic(), 0.001), retry=cached is None, allow_auto_topic_creation=self._auto_create
                )
            except KafkaException:
                if cached is not None:
                    return cached  # keep reporting what we knew; a later produce() asks again
                raise
            info = self._cluster.topics.get(topic)
            if info is None:
                raise KafkaException(KafkaError(KafkaError._BAD_MSG, f"the brokers' metadata answer has no entry for topic {topic!r}"))
            # A topic being auto-created answers LEADER_NOT_AVAILABLE until the brokers have it:
            # librdkafka keeps the record queued meanwhile, so this waits (within max.block.ms).
            pause = self._cluster.backoff(attempt)
            if info.error_code != ErrorCode.LEADER_NOT_AVAILABLE or time.monotonic() + pause >= deadline:
                return info
            time.sleep(pause)
            attempt += 1

    def _fail_now(
        self,
        topic: str,
        partition: int,
        error: KafkaError,
        delivery: Callable[..., Any] | None,
        key: bytes | None,
        value: bytes | None,
        headers: Any,
        timestamp: int,
    ) -> None:
        """Report a record that cannot enter a batch (its topic or partition is unknown) through its callback."""
        if delivery is None:
            return
        self._accumulator.records_added(1)
        deliveries = [(delivery, 0, key, value, headers, timestamp, time.monotonic())]
        with self._events:
            self._reports.append((topic, partition, deliveries, 1, error, -1, -1))
            self._events.notify_all()

    # ------------------------------------------------------------------ reports

    def _batch_done(self, batch: ProducerBatch, error: KafkaError | None, base_offset: int, log_append_time: int) -> None:
        # Runs on the sender thread: callbacks wait for poll(); uncalled-for reports end here.
        if batch.deliveries:
            with self._events:
                self._reports.append((batch.topic, batch.partition, batch.deliveries, batch.record_count, error, base_offset, log_append_time))
                self._events.notify_all()
            return
        self._accumulator.records_done(batch.record_count)
        with self._events:
            self._events.notify_all()

    def _sender_error(self, error: KafkaError) -> None:
        if self._error_callback is None:
            return
        with self._events:
            self._errors.append(error)
            self._events.notify_all()

    def _throttled(self, address: str, throttle_ms: int) -> None:
        # Runs on the sender thread: throttle_cb runs from poll().
        node_id = next((node for node, known in self._cluster.broker_addresses().items() if known == address), -1)
        with self._events:
            self._throttles.append(ThrottleEvent(address, node_id, throttle_ms / 1000.0))
            self._events.notify_all()

    def _statistics_source(self) -> StatisticsSource:
        now = time.monotonic()
        topics = dict(self._cluster.topics)
        return StatisticsSource(
            name=self._config.log.name,
            client_id=self._config["client.id"],
            kind="producer",
            started=self._started,
            brokers=self._cluster.broker_addresses(),
            leaders={name: info.leaders for name, info in topics.items() if not info.error_code},
            metadata_ages={name: now - info.fetched_at for name, info in topics.items()},
            msg_cnt=len(self),
            msg_size=self._accumulator.buffered_bytes,
        )

    def _serve_events(self, errors: list[KafkaError], throttles: list[ThrottleEvent]) -> None:
        """error_cb, throttle_cb and (when due) stats_cb, in the caller's thread."""
        for error in errors:
            if self._error_callback is not None:
                self._error_callback(error)
        for event in throttles:
            if self._throttle_callback is not None:
                self._throttle_callback(event)
        if self._stats_callback is not None and self._stats_timer.take_due():
            self._stats_callback(statistics_json(self._statistics_source(), self._counters))

    def poll(self, timeout: float | None = None) -> int:
        """Serve delivery reports, error, throttle and statistics callbacks; wait up to ``timeout`` s (None or < 0: forever) for one.

        Returns how many delivery callbacks ran.
        """
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        with self._events:
            while not self._reports and not self._errors and not self._throttles and self._stats_timer.seconds_left() != 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                if deadline is None and len(self) == 0:
                    remaining = 0.1  # nothing can arrive: wake now and then to re-check
                stats_left = self._stats_timer.seconds_left()
                if stats_left is not None:
                    remaining = stats_left if remaining is None else min(remaining, stats_left)
                self._events.wait(remaining)
            reports = list(self._reports)
            self._reports.clear()
            errors = list(self._errors)
            self._errors.clear()
            throttles = list(self._throttles)
            self._throttles.clear()
        self._serve_events(errors, throttles)
        served = 0
        for report in reports:
            served += self._serve(report)
        return served

    def _serve(self, report: _Report) -> int:
        topic, partition, deliveries, record_count, error, base_offset, log_append_time = report
        timestamp_type = TIMESTAMP_LOG_APPEND_TIME if log_append_time >= 0 else TIMESTAMP_CREATE_TIME
        native = records._native
        try:
            if native is not None:
                # One C call per batch builds each Message and calls its callback (the Python loop below is the reference).
                native.serve_deliveries(deliveries, topic, partition, error, base_offset, log_append_time, timestamp_type, self._only_errors, time.monotonic())
            else:
                self._serve_python(topic, partition, deliveries, error, base_offset, log_append_time, timestamp_type)
        finally:
            self._accumulator.records_done(record_count)
        return len(deliveries)

    def _serve_python(
        self, topic: str, partition: int, deliveries: Deliveries, error: KafkaError | None, base_offset: int, log_append_time: int, timestamp_type: int
    ) -> None:
        """Each delivery callback of one batch's report, with its Message (the reference of serve_deliveries in C)."""
        now = time.monotonic()
        for entry in deliveries:
            if entry is None:
                continue  # served already (serve_deliveries marks the entries it served)
            delivery, index, key, value, headers, timestamp, produced_at = entry
            if error is not None:
                offset = -1001
            elif base_offset < 0:
                offset = -1
            else:
                offset = base_offset + index
            record_timestamp = log_append_time if timestamp_type == TIMESTAMP_LOG_APPEND_TIME else timestamp
            if error is None and self._only_errors:
                continue  # delivery.report.only.error
            message = Message(topic, partition, (offset, record_timestamp, key, value, tuple(headers or ())), timestamp_type, error, now - produced_at)
            delivery(error, message)

    def flush(self, timeout: float | None = None) -> int:
        """Send every queued record and serve its report; return how many are still queued.

        ``timeout`` in seconds; None or negative waits until everything is delivered.
        """
        return self._flush(timeout, lambda: False)

    def _flush(self, timeout: float | None, stop: Callable[[], bool]) -> int:
        """flush(), ending early once ``stop()`` is true (a transaction that failed meanwhile)."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        self._accumulator.begin_flush()
        try:
            while len(self) > 0 and not stop():
                remaining = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if remaining <= 0:
                    break
                # Batches without callbacks leave len(self) without queueing a report, so
                # wait for either; poll() alone would sleep until its timeout.
                with self._events:
                    if not self._reports and not self._errors and len(self) > 0:
                        self._events.wait(remaining)
                self.poll(0)
            self.poll(0)
        finally:
            self._accumulator.end_flush()
        return len(self)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Fail records not yet sent with ``_PURGE_QUEUE`` (reported from the next poll()).

        Requests already in flight cannot be recalled; they complete normally.
        """
        if not in_queue:
            return
        error = KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue")
        for batch in self._accumulator.abort_unsent():
            self._batch_done(batch, error, -1, -1)
        self._sender.request_purge()

    # ------------------------------------------------------------------ transactions

    def _transaction_manager(self) -> TransactionManager:
        if self._transactions is None:
            raise KafkaException(
                KafkaError(KafkaError._NOT_CONFIGURED, 'Local: Functionality not configured: the transactional API requires "transactional.id"')
            )
        return self._transactions

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register ``transactional.id`` with its coordinator and fence older producers of it (before any other transactional call).

        ``timeout`` in seconds (None: no limit). Raises KafkaException: retriable _TIMED_OUT
        (call it again), fatal errors, or _STATE when already done.
        """
        self._transaction_manager().init(timeout)
        self._accumulator.wake()

    def begin_transaction(self) -> None:
        """Start a transaction (local: the coordinator learns of it when its first partition is added)."""
        self._transaction_manager().begin()

    def send_offsets_to_transaction(self, offsets: Sequence[TopicPartition], group_metadata: ConsumerGroupMetadata, timeout: float | None = None) -> None:
        """Commit a consumer group's offsets (the next offsets to read) as part of the current transaction.

        ``group_metadata`` comes from ``Consumer.consumer_group_metadata()``; offsets below 0
        are skipped. Raises KafkaException (abortable, fatal, retriable _TIMED_OUT, _STATE).
        """
        self._transaction_manager().send_offsets(offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush the transaction's records, then commit it; read_committed consumers see them from now on.

        Raises KafkaException: ``txn_requires_abort()`` when a record failed (abort_transaction()
        next), retriable _TIMED_OUT (call it again), ``fatal()`` when fenced.
        """
        self._transaction_manager().commit(self._flush, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: unsent records fail with _PURGE_QUEUE (reports served here), then read_committed consumers never see any of them."""
        self._transaction_manager().abort(self._purge_for_abort, timeout)

    def _purge_for_abort(self, timeout: float | None) -> int:
        """Purge what was not sent, then wait (up to ``timeout``) for requests in flight; returns records still outstanding."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        self.purge(in_queue=True)
        # The sender purges its queues in its next round: records of the next transaction
        # must not be produced before that, or they would be purged too.
        if not self._sender.wait_for_purge(None if deadline is None else max(deadline - time.monotonic(), 0.0)):
            return max(len(self), 1)
        return self.flush(None if deadline is None else max(deadline - time.monotonic(), 0.0))

    def __len__(self) -> int:
        """Records produced whose delivery report has not been served yet."""
        return self._accumulator.outstanding

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        return self._cluster.list_topics(topic, timeout)

    def close(self, timeout: float | None = None) -> int:
        """Flush (up to ``timeout``), stop the sender and close connections; returns records left undelivered.

        confluent-kafka has no close(); it is here so that tests and tools can release threads
        and sockets deterministically.
        """
        if self._closed:
            return 0
        if self._transactions is not None and self._transactions.failed:
            # A failed transaction sends nothing more: what it still holds could only wait for
            # delivery.timeout.ms, so it fails now (_PURGE_QUEUE), as abort_transaction() would.
            self.purge(in_queue=True)
        remaining = self.flush(timeout)
        self._closed = True
        self._sender.stop(timeout=5.0)
        self.poll(0)
        self._cluster.close()
        return remaining

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
