"""``python -m bench failover``: issue 4's failover time, with default and tuned session timeouts.

The figure: the time from ``kill -9`` of a partition's leader to the first successful
delivery report of a record produced after the kill, with an idempotent producer and
acks=all. The topic has one partition, three replicas and min.insync.replicas=2, so that the
two surviving replicas can take every write once one of them leads.

Each configuration gets a stack of its own (:class:`bench.stack.LocalStack`, three brokers),
started with its controller session timeout (``broker.session.timeout.ms``), its brokers'
heartbeat interval and ``replica.lag.time.max.ms``. In each run a producer sends a steady
stream (one record every STREAM_INTERVAL); once acknowledgements flow, the benchmark reads
the leader from metadata, kills that broker's process and keeps producing until a record
produced after the kill is acknowledged. Before the next run it waits until `make up` has
restarted the broker and it is back in the ISR, so that every run starts from a healthy
partition.

The breakdown: *leader moved* is when a metadata poll (every LEADER_POLL_SECONDS, from
another thread) first shows another leader. It covers the controller noticing the death (the
killed broker's lease stream closes and its address refuses connections: after
broker.session.disconnect.grace.ms, not the session timeout, which only a silent but connected
broker waits for), fencing the broker, electing a new leader from the ISR and pushing the
change to the brokers. *after the move* is the rest: the client finding
the new leader (metadata refresh, retry backoff) and the new leader's acks=all round trip.
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.pacing import RatePacer
from bench.replicated_topics import TopicSetupError, create_topic, partition_states, wait_until_healthy
from bench.report import machine_description
from bench.stack import ApiClient, LocalStack, StackError
from weir import Producer
from weir.admin import AdminClient
from weir.errors import KafkaException

TOPIC = "demo-bench-failover"  # the demo service account may write topics starting with "demo"
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
RECORD = b"f" * 100  # every record of the stream; its content does not matter

STREAM_RATE = 200  # records per second: one every STREAM_INTERVAL
STREAM_INTERVAL_MS = 1000 / STREAM_RATE
POLL_SLICE_SECONDS = 0.002  # longest poll() between two due records: delivery reports are timed this finely
WARM_UP_SECONDS = 1.0  # of acknowledged stream before the kill
FIRST_ACK_LIMIT_SECONDS = 15.0  # for the stream's first acknowledgement (connect, producer id, ISR) on a busy machine
LEADER_WATCH_GRACE_SECONDS = 10.0  # after the first acknowledgement, for a slow metadata poll to see the move
LEADER_POLL_SECONDS = 0.05  # metadata poll of the breakdown's "leader moved"
FAILOVER_TIMEOUT_MARGIN_SECONDS = 60.0  # a run fails when no ack comes within the session timeout plus this
FLUSH_TIMEOUT_SECONDS = 30.0  # for the records still queued when a run ends
TOPIC_READY_TIMEOUT_SECONDS = 60.0
# A killed broker is back after the controller fenced it (the session timeout) plus the restart
# delay of `make up` and its catch-up; a run that is not healthy again this long after that fails.
RECOVERY_MARGIN_SECONDS = 150.0
NANOSECONDS_PER_MILLISECOND = 1_000_000
# The producer: an application that wants every record exactly once on a replicated topic.
PRODUCER_SETTINGS = {"acks": "all", "enable.idempotence": True, "linger.ms": 0}


class FailoverRunError(Exception):
    """A run could not be measured (nothing acknowledged, records lost, no leader); the message says how."""

    retriable = False


@dataclass(frozen=True)
class SessionSettings:
    """One configuration of the failure detection: a stack is started with these."""

    name: str
    session_timeout_ms: int  # the controllers' broker.session.timeout.ms
    heartbeat_interval_ms: int  # the brokers' broker.heartbeat.interval.ms
    replica_lag_time_max_ms: int  # the brokers' replica.lag.time.max.ms

    def stack_settings(self) -> dict[str, str]:
        """The environment of `make up` that applies these settings."""
        return {
            "WEIR_BROKER_SESSION_TIMEOUT_MS": str(self.session_timeout_ms),
            "WEIR_BROKER_BROKER_HEARTBEAT_INTERVAL_MS": str(self.heartbeat_interval_ms),
            "WEIR_BROKER_REPLICA_LAG_TIME_MAX_MS": str(self.replica_lag_time_max_ms),
        }


# `make up`'s defaults (deploy.local and broker_nodes.config), spelt out so that the table shows them;
# a killed broker is detected by its closed connection (broker.session.disconnect.grace.ms, 300 ms), not by these.
DEFAULT_SETTINGS = SessionSettings("default", session_timeout_ms=9000, heartbeat_interval_ms=2000, replica_lag_time_max_ms=30000)
# Faster detection for a cluster on a reliable network: a broker silent for 2 s is fenced.
TUNED_SETTINGS = SessionSettings("tuned", session_timeout_ms=2000, heartbeat_interval_ms=250, replica_lag_time_max_ms=2000)
CONFIGURATIONS = {settings.name: settings for settings in (DEFAULT_SETTINGS, TUNED_SETTINGS)}


@dataclass(frozen=True)
class FailoverSample:
    """One run: the broker killed and how long until the stream was acknowledged again."""

    killed_broker: int
    failover_ms: float
    new_leader: int | None  # as the metadata poll saw it; None if it never saw one
    leader_moved_ms: float | None

    @property
    def after_move_ms(self) -> float | None:
        return None if self.leader_moved_ms is None else self.failover_ms - self.leader_moved_ms


@dataclass
class ConfigurationResult:
    """Every run of one configuration, and what went wrong (a run that failed has no sample)."""

    settings: SessionSettings
    samples: list[FailoverSample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class DeliveryClock:
    """The delivery reports of the stream: how many succeeded, the errors, and when the first
    record produced at or after ``kill_ns`` was acknowledged. Used from the producing thread
    only (reports are served by its poll() calls)."""

    def __init__(self, clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock_ns = clock_ns
        self.acknowledged = 0
        self.errors: list[str] = []
        self.kill_ns: int | None = None
        self.first_ack_after_kill_ns: int | None = None

    def on_delivery(self, produced_ns: int, error: Any, _message: Any) -> None:
        """on_delivery of a record produced at ``produced_ns`` (bind it with functools.partial)."""
        if error is not None:
            self.errors.append(str(error))
            return
        self.acknowledged += 1
        if self.kill_ns is not None and produced_ns >= self.kill_ns and self.first_ack_after_kill_ns is None:
            self.first_ack_after_kill_ns = self._clock_ns()

    @property
    def failover_ms(self) -> float | None:
        if self.kill_ns is None or self.first_ack_after_kill_ns is None:
            return None
        return (self.first_ack_after_kill_ns - self.kill_ns) / NANOSECONDS_PER_MILLISECOND


class LeaderWatch:
    """Polls metadata from a thread of its own until stopped; ``moved_ns`` is when it first saw
    a leader other than ``old_leader`` (and not -1), ``new_leader`` which one."""

    def __init__(self, client_config: dict[str, Any], topic: str, old_leader: int) -> None:
        self._admin = AdminClient(client_config)
        self._topic = topic
        self._old_leader = old_leader
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="leader watch", daemon=True)
        self.moved_ns: int | None = None
        self.new_leader: int | None = None

    def __enter__(self) -> LeaderWatch:
        self._thread.start()
        return self

    def __exit__(self, error_type: type[BaseException] | None, *_: object) -> None:
        # On a busy machine the producer can be acknowledged by the new leader before a poll of
        # this thread returned: give it a bounded while to see the move it has not seen yet.
        if error_type is None:
            self._thread.join(timeout=LEADER_WATCH_GRACE_SECONDS)
        self._stop.set()
        self._thread.join()
        self._admin.close()

    def _watch(self) -> None:
        while self.moved_ns is None and not self._stop.is_set():
            try:
                states = partition_states(self._admin, self._topic)
            except KafkaException:
                states = []  # every broker asked was down or busy: ask again
            leaders = [state.leader for state in states if state.leader not in (-1, self._old_leader)]
            if leaders:
                self.moved_ns, self.new_leader = time.monotonic_ns(), leaders[0]
                return
            self._stop.wait(LEADER_POLL_SECONDS)


class SteadyStream:
    """A producer sending RECORD to partition 0 of ``topic`` at STREAM_RATE, timed by a DeliveryClock."""

    def __init__(self, client_config: dict[str, Any], topic: str, clock: DeliveryClock) -> None:
        self._producer = Producer({**client_config, **PRODUCER_SETTINGS})
        self._topic = topic
        self._clock = clock
        self._pacer = RatePacer(STREAM_RATE)
        self.produced = 0

    def run_until(self, done: Callable[[], bool], deadline: float) -> bool:
        """Produce every due record and serve delivery reports until ``done()`` or ``deadline``
        (time.monotonic()); whether ``done()`` came true."""
        while not done():
            if time.monotonic() >= deadline:
                return False
            while self._pacer.seconds_until_due(self.produced) == 0.0:
                self._producer.produce(self._topic, RECORD, partition=0, on_delivery=functools.partial(self._clock.on_delivery, time.monotonic_ns()))
                self.produced += 1
            self._producer.poll(min(self._pacer.seconds_until_due(self.produced), POLL_SLICE_SECONDS))
        return True

    def finish(self) -> int:
        """Flush and close; the records still undelivered after FLUSH_TIMEOUT_SECONDS."""
        remaining = self._producer.flush(FLUSH_TIMEOUT_SECONDS)
        self._producer.close()
        return remaining


def measure_failover(stack: LocalStack, admin: AdminClient, settings: SessionSettings) -> FailoverSample:
    """One run: kill the leader of the (healthy) topic's partition under a steady stream.

    FailoverRunError, StackError or TopicSetupError when the run could not be measured.
    """
    assert stack.credentials is not None
    client_config = stack.credentials.client_config()
    clock = DeliveryClock()
    stream = SteadyStream(client_config, TOPIC, clock)
    try:
        if not stream.run_until(lambda: clock.acknowledged > 0, time.monotonic() + FIRST_ACK_LIMIT_SECONDS):
            raise FailoverRunError(f"no record of the stream was acknowledged in {FIRST_ACK_LIMIT_SECONDS:g} s: {clock.errors[:3]}")
        stream.run_until(lambda: False, time.monotonic() + WARM_UP_SECONDS)
        states = partition_states(admin, TOPIC)
        leader = states[0].leader if states else -1
        if leader < 0:
            raise FailoverRunError(f"partition 0 of {TOPIC!r} has no leader before the kill: {states}")
        with LeaderWatch(client_config, TOPIC, leader) as watch:
            stack.kill_broker(leader)
            clock.kill_ns = time.monotonic_ns()
            timeout = settings.session_timeout_ms / 1000 + FAILOVER_TIMEOUT_MARGIN_SECONDS
            recovered = stream.run_until(lambda: clock.first_ack_after_kill_ns is not None, time.monotonic() + timeout)
    finally:
        remaining = stream.finish()
    if not recovered or clock.failover_ms is None:
        raise FailoverRunError(f"no record produced after killing broker {leader} was acknowledged within {timeout:g} s: {clock.errors[:3]}")
    if remaining or clock.errors:
        raise FailoverRunError(f"broker {leader} killed: {remaining} records undelivered after the flush, {len(clock.errors)} failed: {clock.errors[:3]}")
    moved_ms = None if watch.moved_ns is None else (watch.moved_ns - clock.kill_ns) / NANOSECONDS_PER_MILLISECOND
    return FailoverSample(killed_broker=leader, failover_ms=clock.failover_ms, new_leader=watch.new_leader, leader_moved_ms=moved_ms)


def run_configuration(console: Console, settings: SessionSettings, runs: int) -> ConfigurationResult:
    """Start a stack with ``settings``, measure ``runs`` failovers, stop the stack."""
    result = ConfigurationResult(settings)
    label = f"failover-{settings.name}"
    try:
        with LocalStack(console, label, settings=settings.stack_settings()) as stack:
            assert stack.credentials is not None
            admin = AdminClient(stack.credentials.client_config())
            try:
                create_topic(ApiClient.for_stack(stack.credentials), TOPIC, 1, REPLICATION_FACTOR, {"min.insync.replicas": str(MIN_INSYNC_REPLICAS)})
                wait_until_healthy(admin, TOPIC, 1, TOPIC_READY_TIMEOUT_SECONDS)
                for run in range(1, runs + 1):
                    sample = measure_failover(stack, admin, settings)
                    result.samples.append(sample)
                    console.print(
                        f"{label}: run {run} of {runs}: killed broker {sample.killed_broker}; new leader {sample.new_leader} seen after "
                        f"{_ms(sample.leader_moved_ms)} ms; first acknowledgement after {_ms(sample.failover_ms)} ms",
                        markup=False,
                    )
                    if run < runs:
                        console.print(f"{label}: waiting for broker {sample.killed_broker} to be restarted and back in the ISR ...", markup=False)
                        wait_until_healthy(admin, TOPIC, 1, settings.session_timeout_ms / 1000 + RECOVERY_MARGIN_SECONDS)
            except (FailoverRunError, StackError, TopicSetupError, KafkaException) as error:
                result.failures.append(f"{settings.name}: {error}")
                console.print(stack.log_tails(), markup=False, highlight=False)
            finally:
                admin.close()
    except StackError as error:
        result.failures.append(f"{settings.name}: {error}")
    return result


# ----------------------------------------------------------------------------- report


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _median(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def results_table(results: Sequence[ConfigurationResult], runs: int, command: str) -> Table:
    table = Table(
        title="Failover: kill -9 of the partition leader -> first acks=all acknowledgement of a record produced after the kill",
        caption=(
            f"{command}\n1 partition, replication factor {REPLICATION_FACTOR}, min.insync.replicas={MIN_INSYNC_REPLICAS}; idempotent producer, "
            f"acks=all, one {len(RECORD)} B record every {STREAM_INTERVAL_MS:g} ms. leader moved: first {LEADER_POLL_SECONDS * 1000:g} ms "
            "metadata poll showing another leader (detection, fencing, election, push); after the move: client rerouting and the ack."
        ),
    )
    for column in (
        "config",
        "session timeout ms",
        "heartbeat ms",
        "replica lag max ms",
        "runs",
        "min ms",
        "median ms",
        "max ms",
        "leader moved (median ms)",
        "after the move (median ms)",
        "failures",
    ):
        table.add_column(column, justify="left" if column == "config" else "right")
    for result in results:
        settings = result.settings
        failover = [sample.failover_ms for sample in result.samples]
        table.add_row(
            settings.name,
            f"{settings.session_timeout_ms:,}",
            f"{settings.heartbeat_interval_ms:,}",
            f"{settings.replica_lag_time_max_ms:,}",
            f"{len(result.samples)}/{runs}",
            _ms(min(failover, default=None)),
            _ms(_median(failover)),
            _ms(max(failover, default=None)),
            _ms(_median([sample.leader_moved_ms for sample in result.samples])),
            _ms(_median([sample.after_move_ms for sample in result.samples])),
            str(len(result.failures)),
        )
    return table


def main(runs: int, configuration_names: Sequence[str], console: Console) -> int:
    """Measure each named configuration (one stack each, in turn); print the table; 1 on any failure."""
    results = []
    for name in configuration_names:
        results.append(run_configuration(console, CONFIGURATIONS[name], runs))
    command = f"python -m bench failover --runs {runs} --failover-config {','.join(configuration_names)}"
    console.print(results_table(results, runs, command))
    console.print(machine_description(malloc_tuned=False), markup=False)
    failures = [failure for result in results for failure in result.failures]
    for failure in failures[:10]:
        console.print(f"failure: {failure}", markup=False)
    return 1 if failures or any(len(result.samples) < runs for result in results) else 0
