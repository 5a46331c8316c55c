"""Consumer-group proofs with real processes: the member process, its driver, an observer, and the checks.

**The member process** (``python -m tests.cluster.group_workload --name N --settings FILE
--events FILE``) is an at-least-once application: a ``weir.Consumer`` subscribed to one topic
in one group, enable.auto.commit off, that processes each batch poll() returns and then
commits (synchronously) the offsets after it; a partition about to be revoked gets its
processed offsets committed in ``on_revoke``. It writes every step to its event log, one
JSON object per line with ``t`` = ``time.time()`` (one clock for every process on the host):
``member`` (its member id, on every change), ``assign`` / ``revoke`` / ``lost`` (partitions,
``t`` when the callback began, ``t_exit`` when it returned), ``processed`` (partition and
``[offset, value]`` pairs), ``commit`` (offsets, ``t_sent``, per-partition errors or the
failure of the whole request), ``error`` (error events and error_cb), ``sdk`` (the SDK's
warnings, such as the max.poll.interval.ms leave), ``stall`` and ``closed``. Signals drive
it: SIGTERM closes it (on_revoke, commit, leave), SIGUSR1 makes it stop polling for
``stall_seconds`` between two polls (an application stuck in its own work). This module
imports only the SDK at its top, because the member process runs it without Django.

**What "holds" means.** A process *holds* partition P from the moment its ``on_assign(P)``
begins until the first of:

- its ``on_revoke(P)`` or ``on_lost(P)`` returned (its own view: after that it neither
  processes nor commits P; the coordinator hears of the revocation only afterwards);
- the coordinator removed its member: the coordinator's log line ``member M removed``
  (session or rebalance timeout: a process killed with -9 or frozen with SIGSTOP);
- its member left on its own: the SDK's warning that max.poll.interval.ms passed, written
  just before the leave heartbeat is sent, so the coordinator can act only later.

So for a killed or frozen process the hold ends when the *group* stopped counting it, not
when the process noticed. Two ends are early by a little: the coordinator's log time is
truncated to the millisecond, and a max.poll.interval.ms leave counts from the member's
decision, the leave's trip to the coordinator before it takes effect. A handover inside that
margin would go unnoticed; any other overlap is found.

The driver side: :class:`MemberFleet` starts member processes and injects the faults (kill
-9, SIGSTOP/SIGCONT, stall, close), :class:`GroupObserver` reads the group's description and
committed offsets every 200 ms. The checks (each returns a list of problems):

- :func:`check_single_holder`: no partition held by two processes at any instant;
- :func:`check_processing_within_holds`: a process processes and successfully commits a
  partition only while it holds it, with one exception: a frozen process, once thawed
  (SIGCONT), may finish the batch it had in hand before it hears that it was removed
  (a *zombie* batch, as in Kafka); those records are counted, and any commit of them must
  have been refused;
- :func:`check_every_record_processed`: every acknowledged record processed at least once,
  at its partition and offset;
- :func:`check_committed_never_backwards`: the committed offsets the observer read never
  decrease (no reset happens in these runs);
- :func:`check_snapshots_single_owner`: no coordinator description ever assigns a partition
  to two members.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from weir import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Message, TopicPartition
from weir.admin import AdminClient, OffsetSpec

if TYPE_CHECKING:
    from tests.cluster.workload import ProducerLedger
    from tests.support.real_cluster import ClusterTimings

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.cluster.group_workload"

GROUP_BROKER_CONFIGS = {
    # Members heartbeat this often (at most a third of their session timeout), so that
    # assignments move within a fraction of a second.
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.session.timeout.ms": "1000",
}
BATCH_RECORDS = 200  # most records one consume() returns
POLL_SECONDS = 0.2  # longest one consume() waits
START_SECONDS = 30.0  # a member process joins its group within this
CLOSE_SECONDS = 20.0  # a closing member process gets this long before kill -9
OBSERVE_SECONDS = 0.2  # the observer's period
ADMIN_TIMEOUT_SECONDS = 3.0  # of one observer call
STALL_MARKER = "maximum poll interval"  # in the SDK's warning when a member leaves for not polling
MEMBER_IN_STALL_WARNING = re.compile(r"member (\S+) leaves group")
# The coordinator's log line when a timer removes a member (broker_nodes.coordinator.groups.coordinator).
REMOVAL_LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO .*? broker_nodes\.coordinator\.groups\.coordinator: "
    r"group (?P<group>\S+): member (?P<member>\S+) removed: (?P<reason>.*)$"
)


def group_cluster_timings(**overrides: Any) -> ClusterTimings:
    """The real cluster's ClusterTimings plus :data:`GROUP_BROKER_CONFIGS` for every broker.

    Imported here rather than at the top: member processes run this module without Django.
    """
    from tests.support.real_cluster import ClusterTimings

    @dataclass(frozen=True)
    class GroupClusterTimings(ClusterTimings):
        def broker_configs(self) -> dict[str, str]:
            return {**super().broker_configs(), **GROUP_BROKER_CONFIGS}

    return GroupClusterTimings(**overrides)


# ============================================================================ the member process


@dataclass(frozen=True)
class MemberSettings:
    """What a member process is told (written as JSON for it)."""

    client_config: dict[str, Any]
    group: str
    topic: str
    session_timeout_ms: int
    max_poll_interval_ms: int
    stall_seconds: float = 0.0

    def consumer_config(self, name: str, on_error: Callable[[KafkaError], None]) -> dict[str, Any]:
        return {
            **self.client_config,
            "group.id": self.group,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.session_timeout_ms,
            "max.poll.interval.ms": self.max_poll_interval_ms,
            "error_cb": on_error,
        }


class EventLog:
    """Append-only JSON lines, written whole under a lock from any thread; line-buffered, so a
    kill -9 loses at most a torn last line."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - open for the process's life
        self._lock = threading.Lock()

    def write(self, kind: str, *, t: float | None = None, **fields: Any) -> None:
        line = json.dumps({"e": kind, "t": time.time() if t is None else t, **fields})
        with self._lock:
            self._file.write(line + "\n")


class _SdkWarnings(logging.Handler):
    """The SDK's warnings into the event log (the max.poll.interval.ms leave is one)."""

    def __init__(self, events: EventLog) -> None:
        super().__init__(logging.WARNING)
        self._events = events

    def emit(self, record: logging.LogRecord) -> None:
        self._events.write("sdk", t=record.created, level=record.levelname, logger=record.name, message=record.getMessage())


class MemberProcess:
    """The application inside a member process (see the module docstring). Single-threaded
    apart from the SDK's threads; signal handlers only set flags."""

    def __init__(self, name: str, settings: MemberSettings, events: EventLog) -> None:
        self.name = name
        self.settings = settings
        self.events = events
        self.consumer = Consumer(settings.consumer_config(name, lambda error: events.write("error", code=error.name(), message=error.str())))
        self.uncommitted: dict[int, int] = {}  # partition -> offset after the last record processed, not yet committed
        self.member_id: str | None = None
        self.stopping = False
        self.stall_requested = False

    def run(self) -> None:
        self.events.write("start", pid=os.getpid())
        self.consumer.subscribe([self.settings.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        while not self.stopping:
            if self.stall_requested:
                self.stall_requested = False
                self.events.write("stall", seconds=self.settings.stall_seconds)
                time.sleep(self.settings.stall_seconds)
                self.events.write("stall-end")
            # As consume_available(), but each consume()'s records are processed before the next
            # call, which may run on_revoke / on_lost for them (then they would be out of hand).
            first = self.consumer.consume(1, POLL_SECONDS)
            self._note_member()
            self._process(first)
            if first:
                self._process(self.consumer.consume(BATCH_RECORDS - 1, 0))
            self._commit(sorted(self.uncommitted))
        self.consumer.close()
        self.events.write("closed")

    def _note_member(self) -> str | None:
        member_id = self.consumer.memberid()
        if member_id != self.member_id and member_id is not None:
            self.member_id = member_id
            self.events.write("member", member=member_id)
        return self.member_id

    def _process(self, messages: list[Message]) -> None:
        by_partition: dict[int, list[list[Any]]] = defaultdict(list)
        for message in messages:
            error = message.error()
            if error is not None:
                self.events.write("error", code=error.name(), message=error.str(), partition=message.partition())
                continue
            by_partition[message.partition()].append([message.offset(), message.value().decode()])  # type: ignore[union-attr]
        for partition, records in sorted(by_partition.items()):
            self.events.write("processed", member=self.member_id, p=partition, r=records)
            self.uncommitted[partition] = records[-1][0] + 1

    def _commit(self, partitions: list[int]) -> None:
        offsets = [TopicPartition(self.settings.topic, partition, self.uncommitted[partition]) for partition in partitions if partition in self.uncommitted]
        if not offsets:
            return
        sent = time.time()
        member_id = self.member_id
        try:
            results = self.consumer.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as failure:
            self.events.write(
                "commit", t_sent=sent, member=member_id, offsets={tp.partition: tp.offset for tp in offsets}, errors={}, failure=failure.args[0].name()
            )
            return
        errors = {tp.partition: tp.error.name() for tp in results if tp.error is not None}
        for tp in results:
            if tp.error is None and self.uncommitted.get(tp.partition) == tp.offset:
                del self.uncommitted[tp.partition]
        self.events.write("commit", t_sent=sent, member=member_id, offsets={tp.partition: tp.offset for tp in offsets}, errors=errors, failure=None)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        began = time.time()
        member_id = self._note_member()
        self.events.write("assign", t=began, t_exit=time.time(), member=member_id, partitions=[tp.partition for tp in partitions])

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        began = time.time()
        member_id = self._note_member()
        numbers = [tp.partition for tp in partitions]
        self._commit(numbers)  # at-least-once: what was processed is committed before the partition goes
        for number in numbers:
            self.uncommitted.pop(number, None)
        self.events.write("revoke", t=began, t_exit=time.time(), member=member_id, partitions=numbers)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        began = time.time()
        numbers = [tp.partition for tp in partitions]
        for number in numbers:
            self.uncommitted.pop(number, None)  # not ours to commit any more: the next holder processes them again
        self.events.write("lost", t=began, t_exit=time.time(), member=self.member_id, partitions=numbers)


def member_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description="One member process of the group proofs.")
    parser.add_argument("--name", required=True)
    parser.add_argument("--settings", type=Path, required=True, help="JSON of MemberSettings")
    parser.add_argument("--events", type=Path, required=True, help="event log (JSON lines) to append to")
    arguments = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    events = EventLog(arguments.events)
    logging.getLogger("weir").addHandler(_SdkWarnings(events))
    member = MemberProcess(arguments.name, MemberSettings(**json.loads(arguments.settings.read_text())), events)

    def stop(_signal: int, _frame: object) -> None:
        member.stopping = True

    def stall(_signal: int, _frame: object) -> None:
        member.stall_requested = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, stall)
    try:
        member.run()
    except Exception:  # noqa: BLE001 - the driver reads why in the event log
        events.write("crash", error=traceback.format_exc())
        return 1
    return 0


# ============================================================================ the driver's side


@dataclass(frozen=True)
class Fault:
    """What the test did to a process: kill, freeze (SIGSTOP), thaw (SIGCONT), stall (SIGUSR1), close (SIGTERM)."""

    kind: str
    t: float


class GroupMemberProcess:
    """One member process, driven by the test. Not thread-safe.

    Its event log is read incrementally (the test polls it often): :meth:`events`,
    :meth:`member_id`, :meth:`holding` and :meth:`last_commit_sent` read only what was
    appended since the last call.
    """

    def __init__(self, directory: Path, name: str, settings: MemberSettings) -> None:
        self.name = name
        self.settings = settings
        directory.mkdir(parents=True, exist_ok=True)
        self.settings_path = directory / f"{name}.settings.json"
        self.events_path = directory / f"{name}.events.jsonl"
        self.output_path = directory / f"{name}.out"
        self.process: subprocess.Popen[bytes] | None = None
        self.faults: list[Fault] = []
        self.frozen = False
        self._events: list[dict[str, Any]] = []
        self._read_bytes = 0
        self._unfinished_line = b""
        self._member_id: str | None = None
        self._holding: frozenset[int] = frozenset()
        self._last_commit_sent = -math.inf
        self._last_processed = -math.inf

    def start(self) -> GroupMemberProcess:
        self.settings_path.write_text(json.dumps(asdict(self.settings)))
        with open(self.output_path, "ab") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", MODULE, "--name", self.name, "--settings", str(self.settings_path), "--events", str(self.events_path)],
                cwd=REPOSITORY_ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _signal(self, number: int, kind: str) -> None:
        assert self.running, f"member process {self.name} is not running:\n{self.output_tail()}"
        self.faults.append(Fault(kind, time.time()))
        self.process.send_signal(number)  # type: ignore[union-attr]

    def kill(self) -> None:
        """kill -9."""
        self._signal(signal.SIGKILL, "kill")
        self.process.wait(timeout=10)  # type: ignore[union-attr]

    def freeze(self) -> None:
        self._signal(signal.SIGSTOP, "freeze")
        self.frozen = True

    def thaw(self) -> None:
        self._signal(signal.SIGCONT, "thaw")
        self.frozen = False

    def stall(self) -> None:
        """Make the application stop polling for its ``stall_seconds``."""
        self._signal(signal.SIGUSR1, "stall")

    def close(self, timeout: float = CLOSE_SECONDS) -> int | None:
        """SIGTERM (the consumer closes: on_revoke, commit, leave) and wait; kill -9 after ``timeout``. Its exit code."""
        if self.process is None:
            return None
        if self.frozen:
            self.thaw()
        if self.process.poll() is None:
            self.faults.append(Fault("close", time.time()))
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def _read_new_events(self) -> None:
        if not self.events_path.exists():
            return
        with open(self.events_path, "rb") as log:
            log.seek(self._read_bytes)
            appended = log.read()
        self._read_bytes += len(appended)
        *lines, self._unfinished_line = (self._unfinished_line + appended).split(b"\n")
        for line in lines:
            event = json.loads(line)
            self._events.append(event)
            kind = event["e"]
            if kind == "member":
                self._member_id = event["member"]
            elif kind == "assign":
                self._holding |= frozenset(event["partitions"])
            elif kind in ("revoke", "lost"):
                self._holding -= frozenset(event["partitions"])
            elif kind == "processed":
                self._last_processed = event["t"]
            elif kind == "commit" and event["failure"] is None and not event["errors"]:
                self._last_commit_sent = max(self._last_commit_sent, event["t_sent"])

    def events(self) -> list[dict[str, Any]]:
        """The event log so far; a torn last line (a kill -9 mid-write) is left out."""
        self._read_new_events()
        return list(self._events)

    def member_id(self) -> str | None:
        """The member id it last reported."""
        self._read_new_events()
        return self._member_id

    def holding(self) -> frozenset[int]:
        """The partitions it holds by its own callbacks: assigned, not revoked or lost since."""
        self._read_new_events()
        return self._holding

    def last_commit_sent(self) -> float:
        """When it sent the last commit the coordinator accepted whole (-inf: none yet)."""
        self._read_new_events()
        return self._last_commit_sent

    def last_processed(self) -> float:
        """When it last processed records (-inf: never)."""
        self._read_new_events()
        return self._last_processed

    def output_tail(self, lines: int = 30) -> str:
        text = self.output_path.read_text(errors="replace") if self.output_path.exists() else "(no output)"
        return f"----- member process {self.name} ({self.output_path})\n" + "\n".join(text.splitlines()[-lines:])


class MemberFleet:
    """The member processes of one test; a context manager that ends every one of them."""

    def __init__(self, directory: Path, settings: MemberSettings) -> None:
        self.directory = directory
        self.settings = settings
        self.members: dict[str, GroupMemberProcess] = {}

    def start(self, name: str) -> GroupMemberProcess:
        member = GroupMemberProcess(self.directory, name, self.settings).start()
        self.members[name] = member
        return member

    def live(self) -> list[GroupMemberProcess]:
        """Members whose process runs and that the test neither killed nor closed."""
        return [member for member in self.members.values() if member.running and not any(fault.kind in ("kill", "close") for fault in member.faults)]

    def live_member_ids(self) -> set[str]:
        return {member_id for member in self.live() if (member_id := member.member_id()) is not None}

    def settled(self, snapshot: Snapshot | None, partitions: int) -> bool:
        """The description shows the group settled with exactly the live processes as members,
        and each process holds, by its own callbacks, what the coordinator assigns it."""
        live = self.live()
        ids = [member.member_id() for member in live]
        if snapshot is None or None in ids or not snapshot.settled(set(ids), partitions):  # type: ignore[arg-type]
            return False
        return all(snapshot.members[member_id] == member.holding() for member_id, member in zip(ids, live))  # type: ignore[index]

    def close_all(self) -> dict[str, int | None]:
        return {name: member.close() for name, member in self.members.items()}

    def output_tails(self) -> str:
        return "\n".join(member.output_tail() for member in self.members.values())

    def __enter__(self) -> MemberFleet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for member in self.members.values():
            if member.running:
                if member.frozen:
                    member.thaw()
                member.kill()


# ============================================================================ the observer


@dataclass(frozen=True)
class Snapshot:
    """One ConsumerGroupDescribe as the observer got it: member id -> assigned partitions."""

    t: float
    state: str
    coordinator: int
    members: dict[str, frozenset[int]]
    targets: dict[str, frozenset[int]]

    def settled(self, member_ids: set[str], partitions: int) -> bool:
        """Stable, exactly these members, each at its target, every partition assigned exactly once."""
        assigned = [partition for owned in self.members.values() for partition in owned]
        return (
            self.state == "Stable"
            and set(self.members) == member_ids
            and all(self.members[member_id] == self.targets.get(member_id) for member_id in self.members)
            and sorted(assigned) == list(range(partitions))
        )


class GroupObserver:
    """Reads the group's description and committed offsets every OBSERVE_SECONDS from a thread
    of its own, through the AdminClient, keeping every answer with its time. Errors (no group
    yet, a coordinator moving) are kept too and do not stop it. Thread-safe reads."""

    def __init__(self, client_config: Mapping[str, Any], group: str, topic: str) -> None:
        self.group = group
        self.topic = topic
        self._admin = AdminClient(dict(client_config))
        self._lock = threading.Lock()
        self._snapshots: list[Snapshot] = []
        self._offsets: list[tuple[float, dict[int, int]]] = []
        self.errors: list[str] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"observer-{group}", daemon=True)

    def __enter__(self) -> GroupObserver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        if not self._stopping.is_set():
            self._stopping.set()
            self._thread.join(timeout=30)
            self._admin.close()

    def _run(self) -> None:
        while not self._stopping.is_set():
            for read in (self._read_description, self._read_offsets):
                try:
                    read()
                except KafkaException as failure:
                    with self._lock:
                        self.errors.append(f"{time.time():.3f} {failure.args[0].name()}: {failure.args[0].str()}")
                except TimeoutError:
                    with self._lock:
                        self.errors.append(f"{time.time():.3f} no answer within {ADMIN_TIMEOUT_SECONDS * 2:g} s")
            self._stopping.wait(OBSERVE_SECONDS)

    def _read_description(self) -> None:
        description = self._admin.describe_consumer_groups([self.group], request_timeout=ADMIN_TIMEOUT_SECONDS)[self.group].result(ADMIN_TIMEOUT_SECONDS * 2)

        def partitions(assignment: Any) -> frozenset[int]:
            return frozenset(tp.partition for tp in (assignment.topic_partitions if assignment is not None else []) if tp.topic == self.topic)

        snapshot = Snapshot(
            time.time(),
            description.state.state_name,
            description.coordinator.id,
            {member.member_id: partitions(member.assignment) for member in description.members},
            {member.member_id: partitions(member.target_assignment) for member in description.members},
        )
        with self._lock:
            self._snapshots.append(snapshot)

    def _read_offsets(self) -> None:
        result = self._admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(self.group)], request_timeout=ADMIN_TIMEOUT_SECONDS)[self.group].result(
            ADMIN_TIMEOUT_SECONDS * 2
        )
        offsets = {tp.partition: tp.offset for tp in result.topic_partitions or [] if tp.topic == self.topic and tp.error is None and tp.offset >= 0}
        with self._lock:
            self._offsets.append((time.time(), offsets))

    def snapshots(self) -> list[Snapshot]:
        with self._lock:
            return list(self._snapshots)

    def offsets(self) -> list[tuple[float, dict[int, int]]]:
        with self._lock:
            return list(self._offsets)

    def latest_snapshot(self) -> Snapshot | None:
        with self._lock:
            return self._snapshots[-1] if self._snapshots else None

    def latest_offsets(self) -> dict[int, int]:
        with self._lock:
            return dict(self._offsets[-1][1]) if self._offsets else {}

    def latest_errors(self, count: int = 5) -> list[str]:
        with self._lock:
            return self.errors[-count:]


def end_offsets(client_config: Mapping[str, Any], topic: str, partitions: int) -> dict[int, int]:
    """Partition -> its end offset (the offset the next record will get), from the leaders."""
    admin = AdminClient(dict(client_config))
    try:
        futures = admin.list_offsets(
            {TopicPartition(topic, partition): OffsetSpec.latest() for partition in range(partitions)}, request_timeout=ADMIN_TIMEOUT_SECONDS
        )
        return {tp.partition: future.result(ADMIN_TIMEOUT_SECONDS * 2).offset for tp, future in futures.items()}
    finally:
        admin.close()


# ============================================================================ departures and holds


@dataclass(frozen=True)
class Departure:
    """A member the group stopped counting: removed by the coordinator, or leaving for not polling."""

    t: float
    member_id: str
    reason: str


def coordinator_removals(log_paths: Iterable[Path], group: str) -> list[Departure]:
    """Members of ``group`` (plain name) removed by a coordinator's timers, from the brokers' logs.

    The log's time has millisecond resolution, truncated: never later than the removal's line.
    """
    departures = []
    for path in log_paths:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            match = REMOVAL_LINE.match(line)
            if match is None or match["group"].rpartition("~")[2] != group:
                continue
            when = datetime.strptime(match["time"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            departures.append(Departure(when, match["member"], f"removed by the coordinator ({path.name}): {match['reason']}"))
    return departures


def poll_interval_departures(events: Iterable[Mapping[str, Any]]) -> list[Departure]:
    """The SDK's max.poll.interval.ms leaves in a process's event log."""
    departures = []
    for event in events:
        if event["e"] == "sdk" and STALL_MARKER in event["message"].lower():
            match = MEMBER_IN_STALL_WARNING.search(event["message"])
            if match is not None:
                departures.append(Departure(event["t"], match.group(1), "left the group: max.poll.interval.ms passed without a poll"))
    return departures


@dataclass(frozen=True)
class Hold:
    """Process ``process`` held ``partition`` over [start, end) (see the module docstring).

    ``released`` is when the process itself let go (on_revoke / on_lost returned; infinity when
    it never did, killed first); ``end`` <= ``released``, earlier when the group stopped
    counting it first, as ``ended_by`` says.
    """

    process: str
    member_id: str
    partition: int
    start: float
    end: float
    released: float
    ended_by: str


@dataclass
class MemberRecord:
    """One member process's event log and faults, as the checks take them."""

    name: str
    events: list[dict[str, Any]]
    faults: list[Fault] = field(default_factory=list)

    @classmethod
    def of(cls, member: GroupMemberProcess) -> MemberRecord:
        return cls(member.name, member.events(), list(member.faults))

    def fault_times(self, kind: str) -> list[float]:
        return [fault.t for fault in self.faults if fault.kind == kind]


def build_holds(record: MemberRecord, departures: Iterable[Departure]) -> tuple[list[Hold], list[str]]:
    """The holds of one process; problems when its log contradicts itself or a hold never ends."""
    by_member: dict[str, list[Departure]] = defaultdict(list)
    for departure in [*departures, *poll_interval_departures(record.events)]:
        by_member[departure.member_id].append(departure)
    holds: list[Hold] = []
    problems: list[str] = []
    open_holds: dict[int, tuple[float, str]] = {}

    def close(partition: int, released: float, how: str) -> None:
        start, member_id = open_holds.pop(partition)
        left = min((departure for departure in by_member.get(member_id, []) if departure.t >= start), key=lambda departure: departure.t, default=None)
        if left is not None and left.t < released:
            holds.append(Hold(record.name, member_id, partition, start, left.t, released, left.reason))
        else:
            holds.append(Hold(record.name, member_id, partition, start, released, released, how))

    for event in record.events:
        kind = event["e"]
        if kind == "assign":
            for partition in event["partitions"]:
                if partition in open_holds:
                    problems.append(f"{record.name}: on_assign({partition}) at {event['t']:.3f} while it already held it")
                    continue
                open_holds[partition] = (event["t"], event["member"] or "")
        elif kind in ("revoke", "lost"):
            for partition in event["partitions"]:
                if partition not in open_holds:
                    problems.append(f"{record.name}: on_{kind}({partition}) at {event['t']:.3f} without holding it")
                    continue
                close(partition, event["t_exit"], "revoked" if kind == "revoke" else "lost")
    for partition in sorted(open_holds):
        close(partition, math.inf, "never released")
        if holds[-1].end == math.inf:
            problems.append(
                f"{record.name}: partition {partition} (member {holds[-1].member_id}) was never released and the coordinator never removed the member"
            )
    return holds, problems


def all_holds(records: Iterable[MemberRecord], departures: list[Departure]) -> tuple[list[Hold], list[str]]:
    holds: list[Hold] = []
    problems: list[str] = []
    for record in records:
        found, trouble = build_holds(record, departures)
        holds += found
        problems += trouble
    return holds, problems


# ============================================================================ the checks


def _when(t: float) -> str:
    return "never" if t == math.inf else datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]


def check_single_holder(holds: Iterable[Hold]) -> list[str]:
    """No partition held by two processes at the same time."""
    by_partition: dict[int, list[Hold]] = defaultdict(list)
    for hold in holds:
        by_partition[hold.partition].append(hold)
    problems = []
    for partition, partition_holds in sorted(by_partition.items()):
        ordered = sorted(partition_holds, key=lambda hold: hold.start)
        for index, first in enumerate(ordered):
            for second in ordered[index + 1 :]:
                if second.start >= first.end:
                    break
                if second.process != first.process:
                    problems.append(
                        f"partition {partition} held by two processes: {first.process} (member {first.member_id}) from {_when(first.start)} "
                        f"to {_when(first.end)} ({first.ended_by}) and {second.process} (member {second.member_id}) from {_when(second.start)}"
                    )
    return problems


@dataclass
class ProcessingCheck:
    problems: list[str] = field(default_factory=list)
    zombie_records: int = 0  # records a thawed process processed after the group had removed it
    refused_commits: int = 0  # partitions whose commit the coordinator refused
    successful_commits: int = 0


def check_processing_within_holds(records: Iterable[MemberRecord], holds: Iterable[Hold]) -> ProcessingCheck:
    """Processing and successful commits only while holding the partition (zombie batches excepted, see the module docstring)."""
    result = ProcessingCheck()
    by_process: dict[tuple[str, int], list[Hold]] = defaultdict(list)
    for hold in holds:
        by_process[(hold.process, hold.partition)].append(hold)
    for record in records:
        thaws = record.fault_times("thaw")
        for event in record.events:
            if event["e"] == "processed":
                t, partition = event["t"], event["p"]
                hold = next((hold for hold in by_process[(record.name, partition)] if hold.start <= t <= hold.released), None)
                offsets = f"offsets {event['r'][0][0]}..{event['r'][-1][0]}"
                if hold is None:
                    result.problems.append(f"{record.name} processed partition {partition} {offsets} at {_when(t)} without holding it")
                elif t >= hold.end:
                    if any(hold.end <= thaw <= t for thaw in thaws):
                        result.zombie_records += len(event["r"])
                    else:
                        result.problems.append(
                            f"{record.name} processed partition {partition} {offsets} at {_when(t)} after its hold ended at {_when(hold.end)} ({hold.ended_by})"
                        )
            elif event["e"] == "commit":
                for key, offset in event["offsets"].items():
                    partition = int(key)
                    if event["failure"] is not None or key in event["errors"]:
                        result.refused_commits += 1
                        continue
                    result.successful_commits += 1
                    held = any(hold.start <= event["t"] and event["t_sent"] < hold.end for hold in by_process[(record.name, partition)])
                    if not held:
                        result.problems.append(
                            f"{record.name} committed partition {partition} at offset {offset} (sent {_when(event['t_sent'])}, "
                            f"acknowledged {_when(event['t'])}) without holding it: the coordinator should have refused"
                        )
    return result


def processed_records(records: Iterable[MemberRecord]) -> dict[tuple[int, int], str]:
    """(partition, offset) -> value of every record any process processed."""
    processed: dict[tuple[int, int], str] = {}
    for record in records:
        for event in record.events:
            if event["e"] == "processed":
                for offset, value in event["r"]:
                    processed[(event["p"], offset)] = value
    return processed


def check_every_record_processed(ledgers: Iterable[ProducerLedger], records: Iterable[MemberRecord]) -> list[str]:
    """Every acknowledged record processed at least once, at the partition and offset it was acknowledged at."""
    processed = processed_records(records)
    values_by_partition: dict[int, set[str]] = defaultdict(set)
    for (partition, _), value in processed.items():
        values_by_partition[partition].add(value)
    problems = []
    for ledger in ledgers:
        with ledger.lock:
            acknowledged = dict(ledger.acknowledged)
        for value, delivery in sorted(acknowledged.items()):
            text = value.decode()
            if delivery.offset < 0:
                found = text in values_by_partition[delivery.partition]
            else:
                found = processed.get((delivery.partition, delivery.offset)) == text
            if not found:
                problems.append(f"acknowledged {text!r} (partition {delivery.partition} offset {delivery.offset}) was never processed")
    return problems


def check_committed_never_backwards(offsets: Iterable[tuple[float, Mapping[int, int]]]) -> list[str]:
    """Each partition's committed offset, in the order the observer read them, never decreases."""
    problems = []
    last: dict[int, tuple[float, int]] = {}
    for t, sample in offsets:
        for partition, offset in sorted(sample.items()):
            if partition in last and offset < last[partition][1]:
                problems.append(
                    f"partition {partition}: committed offset went back from {last[partition][1]} ({_when(last[partition][0])}) to {offset} ({_when(t)})"
                )
            last[partition] = (t, offset)
    return problems


def check_snapshots_single_owner(snapshots: Iterable[Snapshot]) -> list[str]:
    """No description shows a partition assigned to two members."""
    problems = []
    for snapshot in snapshots:
        owners: dict[int, list[str]] = defaultdict(list)
        for member_id, partitions in snapshot.members.items():
            for partition in partitions:
                owners[partition].append(member_id)
        problems += [
            f"{_when(snapshot.t)}: the coordinator assigns partition {partition} to {members}"
            for partition, members in sorted(owners.items())
            if len(members) > 1
        ]
    return problems


def acknowledged_commits(records: Iterable[MemberRecord], before: float) -> dict[int, int]:
    """Partition -> the highest offset whose commit was acknowledged before ``before``."""
    highest: dict[int, int] = {}
    for record in records:
        for event in record.events:
            if event["e"] == "commit" and event["failure"] is None and event["t"] < before:
                for key, offset in event["offsets"].items():
                    if key not in event["errors"]:
                        highest[int(key)] = max(highest.get(int(key), -1), offset)
    return highest


def event_counts(records: Iterable[MemberRecord], kind: str) -> dict[str, int]:
    return {record.name: sum(1 for event in record.events if event["e"] == kind) for record in records}


if __name__ == "__main__":
    sys.exit(member_main())
