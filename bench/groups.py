"""``python -m bench groups``: issue 5's consumer-group figures, on a `make up` stack.

**Settling** (:func:`measure_settling`): a group of four members (``weir.Consumer``
subscribed to an 8-partition topic, each polling in a thread of its own in this process) is
settled; then, in each run, one member closes (*leave*) and the group settles with three,
and a new member subscribes (*join*) and the group settles with four. Each event comes after
a pause drawn uniformly from one heartbeat interval, so that it falls anywhere in the
members' heartbeat cycle rather than right after the heartbeats that settled the group
before (which would make every sample a full interval). The time of one sample
runs from the event (the close() or subscribe() call) to the last rebalance callback
(on_assign / on_revoke / on_lost) of any member that the event caused, once the group is
settled: the members' own assignments, from their callbacks, cover every partition exactly
once, and the coordinator describes the group as Stable with exactly those members, each at
its target assignment. Members hear of changes on their heartbeats, so the figure follows
the heartbeat interval, which the coordinator sets to group.consumer.heartbeat.interval.ms
(5 s on the stack, Kafka's default) but to at most a third of a member's session.timeout.ms;
two configurations are measured: the broker's default session timeout (45 s, heartbeats
every 5 s) and members asking for 3 s (heartbeats every second).

**Throughput** (:func:`measure_throughput`): the same records (``--records`` of
``--record-bytes``, spread over 8 partitions) read from the beginning by one consumer that
``assign()``s every partition and by one that ``subscribe()``s in a fresh group (the group's
only member, enable.auto.commit on, as a group consumer usually runs), alternating run by
run. Throughput is records over the time from the moment the consumer has its partitions
(the assign() call; for the subscribed one, its on_assign callback) to the last record: both
then look their start offsets up, fetch and decode, the subscribed one heartbeating and
committing meanwhile. Joining the group (subscribe() to on_assign) is the settling figure's
business and is shown beside it, with the ratio it gives when counted. The figure is the
ratio of the subscribed consumer's median throughput to the assigned one's (target >= 0.9).
"""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.measurements import BYTES_PER_MEBIBYTE
from bench.payloads import value_pool
from bench.replicated_topics import TopicSetupError, create_topic, wait_until_healthy
from bench.report import machine_description
from bench.stack import ApiClient, LocalStack, StackError
from weir import OFFSET_BEGINNING, Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from weir.admin import AdminClient, OffsetSpec
from weir.consumer import consume_available

RATIO_TARGET = 0.9  # issue 5: group consumption at least 0.9 times assign-based consumption
PREFIX = "demo-bench"  # the demo service account may use topics and groups starting with "demo"
SETTLE_TOPIC = f"{PREFIX}-groups-settle"
THROUGHPUT_TOPIC = f"{PREFIX}-groups-throughput"
PARTITIONS = 8
REPLICATION_FACTOR = 3
GROUP_SIZE = 4
DEFAULT_RUNS = 5
DEFAULT_RECORDS = 500_000
QUICK_RECORDS = 20_000
DEFAULT_RECORD_BYTES = 100
BROKER_HEARTBEAT_INTERVAL_MS = 5000  # group.consumer.heartbeat.interval.ms of the stack's brokers (the default)

TOPIC_READY_TIMEOUT_SECONDS = 60.0
SETTLE_TIMEOUT_SECONDS = 60.0  # a rebalance that has not settled by then fails the run
SETTLE_POLL_SECONDS = 0.05  # how often the members' view is checked (the coordinator's only once it covers)
PAUSE_SEED = 20240601  # the pauses before events are the same from one benchmark run to the next
MEMBER_POLL_SECONDS = 0.1  # one consume() of a member thread
CONSUME_BATCH = 10_000
CONSUME_TIMEOUT_SECONDS = 10.0  # a throughput run fails after this long without a record
ADMIN_TIMEOUT_SECONDS = 10.0
FLUSH_TIMEOUT_SECONDS = 120.0


class GroupBenchError(Exception):
    """A run could not be measured (no settling, records missing, a client error); the message says which."""

    retriable = False


# ============================================================================ settling


@dataclass(frozen=True)
class MemberTimeouts:
    """How the members of one settling configuration time out, hence how often they heartbeat."""

    name: str
    session_timeout_ms: int | None  # None: the coordinator's group.consumer.session.timeout.ms (45 s)

    @property
    def heartbeat_interval_ms(self) -> int:
        """What the coordinator tells the members: its interval, at most a third of their session timeout."""
        return BROKER_HEARTBEAT_INTERVAL_MS if self.session_timeout_ms is None else min(BROKER_HEARTBEAT_INTERVAL_MS, self.session_timeout_ms // 3)

    def consumer_settings(self) -> dict[str, Any]:
        return {} if self.session_timeout_ms is None else {"session.timeout.ms": self.session_timeout_ms}


DEFAULT_TIMEOUTS = MemberTimeouts("default", None)
FAST_TIMEOUTS = MemberTimeouts("session 3 s", 3000)
SETTLE_CONFIGURATIONS = (DEFAULT_TIMEOUTS, FAST_TIMEOUTS)


class RebalanceLog:
    """Every member's rebalance callbacks with their times, and each member's assignment as its
    callbacks made it. Thread-safe: members record from their own threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._changes: list[float] = []
        self._assignments: dict[str, frozenset[int]] = {}

    def record(self, member: str, kind: str, partitions: Sequence[int]) -> None:
        with self._lock:
            self._changes.append(self._clock())
            current = self._assignments.get(member, frozenset())
            self._assignments[member] = current | frozenset(partitions) if kind == "assign" else current - frozenset(partitions)

    def assignments(self) -> dict[str, frozenset[int]]:
        with self._lock:
            return dict(self._assignments)

    def last_change_since(self, since: float) -> float | None:
        with self._lock:
            later = [moment for moment in self._changes if moment >= since]
        return max(later) if later else None


def covers_exactly_once(assignments: Sequence[frozenset[int]], partitions: int) -> bool:
    """Whether the assignments together hold every partition 0..partitions-1 exactly once."""
    return sorted(partition for assignment in assignments for partition in assignment) == list(range(partitions))


class GroupMember:
    """One subscribed consumer polling in a thread of its own until :meth:`stop` (which closes it:
    on_revoke, leave). Its rebalance callbacks go to a :class:`RebalanceLog`."""

    def __init__(self, name: str, config: Mapping[str, Any], topic: str, log: RebalanceLog) -> None:
        self.name = name
        self._topic = topic
        self._log = log
        self.consumer = Consumer({**config, "client.id": name})
        self.errors: list[str] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)

    @property
    def member_id(self) -> str | None:
        return self.consumer.memberid()

    def _callback(self, kind: str) -> Callable[[Consumer, list[TopicPartition]], None]:
        def record(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self._log.record(self.name, kind, [tp.partition for tp in partitions])

        return record

    def start(self) -> None:
        """Subscribe (in the member's thread) and poll."""
        self._thread.start()

    def _run(self) -> None:
        try:
            self.consumer.subscribe([self._topic], on_assign=self._callback("assign"), on_revoke=self._callback("revoke"), on_lost=self._callback("lost"))
            while not self._stopping.is_set():
                for message in consume_available(self.consumer, 100, MEMBER_POLL_SECONDS):
                    if message.error() is not None:
                        self.errors.append(message.error().str())  # type: ignore[union-attr]
        except Exception as error:  # noqa: BLE001 - reported as the run's failure
            self.errors.append(repr(error))
        finally:
            self.consumer.close()

    def stop(self, timeout: float = 30.0) -> None:
        """Close the consumer (in its thread) and wait for it."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        elif self._thread.ident is None:
            self.consumer.close()


def group_settled(admin: AdminClient, group: str, members: Sequence[GroupMember], log: RebalanceLog, partitions: int) -> bool:
    """The members' own assignments cover every partition once, and the coordinator agrees (Stable, same members, each at its target)."""
    assignments = log.assignments()
    mine = {member.name: assignments.get(member.name, frozenset()) for member in members}
    if not covers_exactly_once(list(mine.values()), partitions):
        return False
    names = {member.member_id: member.name for member in members}
    if None in names:
        return False
    description = admin.describe_consumer_groups([group], request_timeout=ADMIN_TIMEOUT_SECONDS)[group].result(ADMIN_TIMEOUT_SECONDS)
    if description.state != ConsumerGroupState.STABLE or {described.member_id for described in description.members} != set(names):
        return False
    for described in description.members:
        assigned = frozenset(tp.partition for tp in described.assignment.topic_partitions)
        target = frozenset(tp.partition for tp in described.target_assignment.topic_partitions) if described.target_assignment is not None else assigned
        if assigned != target or assigned != mine[names[described.member_id]]:
            return False
    return True


def wait_settled(admin: AdminClient, group: str, members: Sequence[GroupMember], log: RebalanceLog, since: float, what: str) -> float:
    """Seconds from ``since`` to the last rebalance callback once the group settled; GroupBenchError after SETTLE_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    while True:
        try:
            if group_settled(admin, group, members, log, PARTITIONS):
                settled_at = log.last_change_since(since)
                return (settled_at if settled_at is not None else time.monotonic()) - since
        except KafkaException:
            pass  # the coordinator did not answer this time: ask again
        errors = [f"{member.name}: {error}" for member in members for error in member.errors]
        if errors or time.monotonic() >= deadline:
            raise GroupBenchError(
                f"{what}: the group did not settle within {SETTLE_TIMEOUT_SECONDS:g} s; members' assignments {log.assignments()}; errors {errors[:5]}"
            )
        time.sleep(SETTLE_POLL_SECONDS)


@dataclass
class SettleResult:
    """The samples of one configuration (seconds) and what failed."""

    timeouts: MemberTimeouts
    leave: list[float] = field(default_factory=list)
    join: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def measure_settling(client_config: Mapping[str, Any], admin: AdminClient, timeouts: MemberTimeouts, runs: int, console: Console) -> SettleResult:
    """``runs`` leave + join rounds of a group of GROUP_SIZE on SETTLE_TOPIC (see the module docstring)."""
    result = SettleResult(timeouts)
    group = f"{PREFIX}-settle-{uuid.uuid4().hex[:8]}"
    config = {**client_config, "group.id": group, "auto.offset.reset": "latest", **timeouts.consumer_settings()}
    log = RebalanceLog()
    created = 0

    def new_member() -> GroupMember:
        nonlocal created
        created += 1
        return GroupMember(f"member-{created}", config, SETTLE_TOPIC, log)

    pauses = random.Random(PAUSE_SEED)
    members = [new_member() for _ in range(GROUP_SIZE)]
    try:
        since = time.monotonic()
        for member in members:
            member.start()
        wait_settled(admin, group, members, log, since, "the first members joining")
        for run in range(1, runs + 1):
            time.sleep(pauses.uniform(0, timeouts.heartbeat_interval_ms / 1000))
            leaving = members.pop(0)
            since = time.monotonic()
            leaving.stop()
            result.leave.append(wait_settled(admin, group, members, log, since, f"run {run}: {leaving.name} closing"))
            joining = new_member()
            members.append(joining)
            time.sleep(pauses.uniform(0, timeouts.heartbeat_interval_ms / 1000))
            since = time.monotonic()
            joining.start()
            result.join.append(wait_settled(admin, group, members, log, since, f"run {run}: {joining.name} joining"))
            console.print(
                f"groups: {timeouts.name}: run {run} of {runs}: settled {result.leave[-1] * 1000:,.0f} ms after a member left, "
                f"{result.join[-1] * 1000:,.0f} ms after one joined",
                markup=False,
            )
    except (GroupBenchError, KafkaException) as error:
        result.failures.append(f"{timeouts.name}: {error}")
    finally:
        for member in members:
            member.stop()
    return result


# ============================================================================ throughput


@dataclass(frozen=True)
class ConsumeSample:
    """One consumer reading the whole topic: ``seconds`` from having its partitions to its last
    record, and ``join_seconds`` from the subscribe() call to its on_assign (0 for assign())."""

    records: int
    record_bytes: int
    join_seconds: float
    seconds: float

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds

    @property
    def records_per_second_with_join(self) -> float:
        return self.records / (self.join_seconds + self.seconds)


ASSIGNED = "assign()"
SUBSCRIBED = "subscribe()"
MODES = (ASSIGNED, SUBSCRIBED)


def run_order(run: int) -> tuple[str, ...]:
    """The modes of run ``run`` (1-based) in the order they are measured: alternating."""
    return MODES if run % 2 == 1 else tuple(reversed(MODES))


def load_topic(client_config: Mapping[str, Any], admin: AdminClient, records: int, record_bytes: int) -> None:
    """Produce ``records`` values round-robin over THROUGHPUT_TOPIC's partitions; GroupBenchError unless every one is stored.

    acks=all: once acknowledged, records are below the high watermark, so consumers can read
    them and the end offsets (ListOffsets answers the high watermark) count them.
    """
    values = value_pool(record_bytes)
    producer = Producer({**client_config, "acks": "all", "enable.idempotence": False, "batch.size": 1_000_000, "linger.ms": 10})
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None and len(failures) < 5:
            failures.append(str(error))

    for index in range(records):
        while True:
            try:
                producer.produce(THROUGHPUT_TOPIC, values[index % len(values)], partition=index % PARTITIONS, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(FLUSH_TIMEOUT_SECONDS)
    producer.close()
    futures = admin.list_offsets(
        {TopicPartition(THROUGHPUT_TOPIC, partition): OffsetSpec.latest() for partition in range(PARTITIONS)}, request_timeout=ADMIN_TIMEOUT_SECONDS
    )
    stored = sum(future.result(ADMIN_TIMEOUT_SECONDS).offset for future in futures.values())
    if remaining or failures or stored != records:
        raise GroupBenchError(f"loading {THROUGHPUT_TOPIC}: {remaining} undelivered, failures {failures}, {stored} stored of {records}")


def read_everything(consumer: Consumer, records: int) -> float:
    """consume() until ``records`` records came; when the last one did (time.perf_counter())."""
    received = 0
    while received < records:
        messages = consume_available(consumer, CONSUME_BATCH, CONSUME_TIMEOUT_SECONDS)
        if not messages:
            raise GroupBenchError(f"no record within {CONSUME_TIMEOUT_SECONDS:g} s after {received:,} of {records:,}")
        for message in messages:
            if message.error() is not None:
                raise GroupBenchError(f"consume error after {received:,} records: {message.error()}")
        received += len(messages)
    if received != records:
        raise GroupBenchError(f"read {received:,} records, the topic holds {records:,}")
    return time.perf_counter()


def consume_once(client_config: Mapping[str, Any], mode: str, records: int, record_bytes: int) -> ConsumeSample:
    """One consumer reading THROUGHPUT_TOPIC from the beginning, assigned or subscribed (a fresh group)."""
    if mode == ASSIGNED:
        consumer = Consumer({**client_config, "group.id": f"{PREFIX}-assigned-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
    else:
        consumer = Consumer({**client_config, "group.id": f"{PREFIX}-subscribed-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest"})
    assigned_at: list[float] = []

    def on_assign(_consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        assigned_at.append(time.perf_counter())

    try:
        called = time.perf_counter()
        if mode == ASSIGNED:
            consumer.assign([TopicPartition(THROUGHPUT_TOPIC, partition, OFFSET_BEGINNING) for partition in range(PARTITIONS)])
            assigned_at.append(called)
        else:
            consumer.subscribe([THROUGHPUT_TOPIC], on_assign=on_assign)
        finished = read_everything(consumer, records)
    finally:
        consumer.close()
    return ConsumeSample(records, record_bytes, assigned_at[0] - called, finished - assigned_at[0])


def measure_throughput(
    client_config: Mapping[str, Any], runs: int, records: int, record_bytes: int, console: Console
) -> tuple[dict[str, list[ConsumeSample]], list[str]]:
    """``runs`` alternating runs of each mode over the loaded topic; the samples of each and the failures."""
    samples: dict[str, list[ConsumeSample]] = {mode: [] for mode in MODES}
    failures: list[str] = []
    for run in range(1, runs + 1):
        for mode in run_order(run):
            try:
                sample = consume_once(client_config, mode, records, record_bytes)
            except (GroupBenchError, KafkaException) as error:
                failures.append(f"throughput run {run}, {mode}: {error}")
                continue
            samples[mode].append(sample)
            console.print(
                f"groups: throughput run {run} of {runs}: {mode}: {sample.records_per_second:,.0f} records/s, partitions after {sample.join_seconds * 1000:,.0f} ms",
                markup=False,
            )
    return samples, failures


def throughput_ratio(samples: Mapping[str, Sequence[ConsumeSample]], *, with_join: bool = False) -> float | None:
    """Median records/s of the subscribed consumer over the assigned one's; None when either has no run."""
    subscribed, assigned = samples.get(SUBSCRIBED, ()), samples.get(ASSIGNED, ())
    if not subscribed or not assigned:
        return None

    def rate(sample: ConsumeSample) -> float:
        return sample.records_per_second_with_join if with_join else sample.records_per_second

    return statistics.median(rate(sample) for sample in subscribed) / statistics.median(rate(sample) for sample in assigned)


def verdict(ratio: float | None) -> str:
    if ratio is None:
        return f"subscribe() / assign(): not measured, target >= {RATIO_TARGET:g}: target NOT met"
    met = "met" if ratio >= RATIO_TARGET else "NOT met"
    return f"subscribe() / assign() (median records/s): {ratio:.2f}, target >= {RATIO_TARGET:g}: target {met}"


# ============================================================================ report


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.0f}"


def settle_table(results: Sequence[SettleResult], runs: int, command: str) -> Table:
    table = Table(
        title=f"Group settling: a group of {GROUP_SIZE} on {PARTITIONS} partitions, one member leaves (close) or joins (subscribe)",
        caption=(
            f"{command}\nFrom the close() / subscribe() call (at a random point of the heartbeat cycle) to the last rebalance callback, once every "
            "partition is assigned exactly once and the coordinator describes the group as Stable at its target; server-side sticky assignor, "
            "incremental (revoke before assign)."
        ),
    )
    for column in (
        "config",
        "session timeout ms",
        "heartbeat ms",
        "runs",
        "leave min ms",
        "leave median ms",
        "leave max ms",
        "join min ms",
        "join median ms",
        "join max ms",
        "failures",
    ):
        table.add_column(column, justify="left" if column == "config" else "right")
    for result in results:
        timeouts = result.timeouts
        table.add_row(
            timeouts.name,
            "45,000 (broker default)" if timeouts.session_timeout_ms is None else f"{timeouts.session_timeout_ms:,}",
            f"{timeouts.heartbeat_interval_ms:,}",
            f"{min(len(result.leave), len(result.join))}/{runs}",
            _ms(min(result.leave, default=None)),
            _ms(statistics.median(result.leave) if result.leave else None),
            _ms(max(result.leave, default=None)),
            _ms(min(result.join, default=None)),
            _ms(statistics.median(result.join) if result.join else None),
            _ms(max(result.join, default=None)),
            str(len(result.failures)),
        )
    return table


def throughput_table(samples: Mapping[str, Sequence[ConsumeSample]], records: int, record_bytes: int, command: str) -> Table:
    table = Table(
        title=f"Group consumption throughput: {records:,} records of {record_bytes} B on {PARTITIONS} partitions, one consumer",
        caption=f"{command}\nrecords/s from having the partitions (assign() / on_assign) to the last record; join: subscribe() to on_assign; medians over runs",
    )
    for column in ("mode", "runs", "records/s", "MiB/s", "join ms"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for mode in MODES:
        runs = samples.get(mode, [])
        if not runs:
            table.add_row(mode, "0", "-", "-", "-")
            continue
        rate = statistics.median(sample.records_per_second for sample in runs)
        table.add_row(
            mode,
            str(len(runs)),
            f"{rate:,.0f}",
            f"{rate * record_bytes / BYTES_PER_MEBIBYTE:,.1f}",
            _ms(statistics.median(sample.join_seconds for sample in runs)),
        )
    return table


def main(runs: int, records: int, record_bytes: int, console: Console) -> int:
    """Start one stack, measure settling (each configuration) and throughput, print both tables; 1 on any failure."""
    settle_results: list[SettleResult] = []
    samples: dict[str, list[ConsumeSample]] = {mode: [] for mode in MODES}
    failures: list[str] = []
    try:
        with LocalStack(console, "groups") as stack:
            assert stack.credentials is not None
            client_config = stack.credentials.client_config()
            api = ApiClient.for_stack(stack.credentials)
            admin = AdminClient(client_config)
            try:
                for topic in (SETTLE_TOPIC, THROUGHPUT_TOPIC):
                    create_topic(api, topic, PARTITIONS, REPLICATION_FACTOR, {"min.insync.replicas": "2"})
                    wait_until_healthy(admin, topic, PARTITIONS, TOPIC_READY_TIMEOUT_SECONDS)
                for timeouts in SETTLE_CONFIGURATIONS:
                    settle_results.append(measure_settling(client_config, admin, timeouts, runs, console))
                load_topic(client_config, admin, records, record_bytes)
                samples, throughput_failures = measure_throughput(client_config, runs, records, record_bytes, console)
                failures += throughput_failures
            except (GroupBenchError, TopicSetupError, KafkaException) as error:
                failures.append(str(error))
            finally:
                admin.close()
            failures += [failure for result in settle_results for failure in result.failures]
            if failures:
                console.print(stack.log_tails(), markup=False, highlight=False)
    except StackError as error:
        failures.append(str(error))
    command = f"python -m bench groups --runs {runs} --records {records} --record-bytes {record_bytes}"
    console.print(settle_table(settle_results, runs, command))
    console.print(throughput_table(samples, records, record_bytes, command))
    console.print(verdict(throughput_ratio(samples)), markup=False)
    with_join = throughput_ratio(samples, with_join=True)
    console.print(f"the same ratio with the time to join the group counted: {'-' if with_join is None else f'{with_join:.2f}'}", markup=False)
    console.print(machine_description(malloc_tuned=False), markup=False)
    for failure in failures[:10]:
        console.print(f"failure: {failure}", markup=False)
    incomplete = any(min(len(result.leave), len(result.join)) < runs for result in settle_results) or any(len(samples[mode]) < runs for mode in MODES)
    return 1 if failures or incomplete or len(settle_results) < len(SETTLE_CONFIGURATIONS) else 0
