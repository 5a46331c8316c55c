"""Where one acks=all record's replication round trip goes, stage by stage, from the brokers' stage stamps.

With ``WEIR_REPLICATION_TRACE=<prefix>`` in their environment, brokers write stage stamps at
exit (``broker_nodes.replication.stage_trace``: stage, topic, partition, offset, replica,
CLOCK_MONOTONIC ns, one tab-separated line each) to ``<prefix>.<pid>``. The producer's side is
stamped by the benchmark on the same clock (``time.monotonic_ns``): produce() called and its
delivery report. :func:`breakdown` lines them up per record (one record per batch, produced
one at a time) and splits its round trip into consecutive stages:

1. client -> leader append: the SDK's send, the Produce on the wire, the leader's request handling
2. append -> follower's fetch woke: the parked fetch's wake-up on the leader
3. woke -> answer built: the fetch's read of its session
4. answer built -> returned: the rest of the read and the session's bookkeeping
5. returned -> answer at follower: the answer's way out (the servicer's protobuf answer, gRPC's
   send, loopback, the follower's gRPC threads and its fetcher thread's wake-up)
6. follower append: the follower's append of the records
7. follower appended -> next fetch sent (handed to the stream)
8. fetch sent -> taken by gRPC's sending thread of the stream (a thread hand-off)
9. taken -> fetch at leader: the fetch's way in (loopback, the leader's gRPC threads, the
   stream handler's wake-up)
10. fetch at leader -> high watermark: the read that records it and moves the high watermark
11. high watermark -> acks=all done: the produce's wake-up and check
12. acks done -> client: the answer's way back and the SDK's delivery report

Stages 2-9 are those of the follower whose next fetch reached the leader last (the one the
high watermark waited for); the other follower's are shown beside them. The stages add up to
the round trip; a record with a stamp missing (its fetch answered by a fetch already in
flight, say) is left out and counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.measurements import LatencySummary
from log_formats.replication_trace import (  # noqa: F401 - TRACE_VARIABLE for bench.replication_round_trip
    ACKS_DONE,
    ANSWER_ARRIVED,
    ANSWER_BUILT,
    ANSWER_RETURNED,
    APPEND,
    APPENDED,
    FETCH_ARRIVED,
    FETCH_DEQUEUED,
    FETCH_SENT,
    FETCH_WOKE,
    FIELDS,
    HIGH_WATERMARK,
    TRACE_VARIABLE,
)

STAGES = (
    "client -> leader append",
    "append -> follower fetch woke",
    "woke -> answer built",
    "answer built -> returned",
    "returned -> at follower",
    "follower append",
    "appended -> next fetch sent",
    "fetch sent -> taken by gRPC's sender",
    "taken -> fetch at leader",
    "fetch at leader -> high watermark",
    "high watermark -> acks done",
    "acks done -> client",
)
OTHER_FOLLOWER = "  other follower: append -> its fetch at leader"
TOTAL = "round trip"


@dataclass(frozen=True, slots=True)
class Stamp:
    stage: str
    topic: str
    partition: int
    offset: int
    replica: int
    nanoseconds: int


@dataclass
class Breakdown:
    """Each stage's durations (ns) over the records that had every stamp, and how many had not."""

    stages: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    records: int = 0
    incomplete: int = 0


def read_stamps(paths: Iterable[Path]) -> list[Stamp]:
    """Every stamp in the files (a line that does not parse is skipped)."""
    stamps = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) != FIELDS:
                continue
            stage, topic, partition, offset, replica, nanoseconds = parts
            stamps.append(Stamp(stage, topic, int(partition), int(offset), int(replica), int(nanoseconds)))
    return stamps


def _first_at_or_after(times: Sequence[int], after: int) -> int | None:
    return next((moment for moment in times if moment >= after), None)


def _last_at_or_before(times: Sequence[int], before: int, after: int) -> int | None:
    candidates = [moment for moment in times if after <= moment <= before]
    return candidates[-1] if candidates else None


def breakdown(stamps: Sequence[Stamp], topic_suffix: str, client: Mapping[int, tuple[int, int]]) -> Breakdown:
    """Stage durations for each record of ``client`` (offset -> (produce() ns, delivery ns)) on the topic whose name ends with ``topic_suffix``."""
    by_key: dict[tuple[str, int, int], list[int]] = defaultdict(list)  # (stage, offset, replica) -> times
    woke: dict[int, list[int]] = defaultdict(list)  # replica -> times its fetch woke on the leader
    for stamp in stamps:
        if stamp.stage == FETCH_WOKE:
            woke[stamp.replica].append(stamp.nanoseconds)
        elif stamp.topic.endswith(topic_suffix):
            replica = stamp.replica if stamp.stage not in (APPEND, HIGH_WATERMARK, ACKS_DONE) else -1
            by_key[(stamp.stage, stamp.offset, replica)].append(stamp.nanoseconds)
    for times in (*by_key.values(), *woke.values()):
        times.sort()
    followers = sorted({replica for (stage, _, replica) in by_key if stage == FETCH_SENT})
    result = Breakdown()
    for offset, (started, delivered) in sorted(client.items()):
        stages = _record_stages(by_key, woke, followers, offset, started, delivered)
        if stages is None:
            result.incomplete += 1
            continue
        result.records += 1
        for name, duration in stages.items():
            result.stages[name].append(duration)
    return result


def _follower_path(offset: int) -> tuple[tuple[str, int], ...]:
    """A follower's stages of the record at ``offset`` after its fetch woke, in order, with the offset each is stamped with."""
    return (
        (ANSWER_BUILT, offset),
        (ANSWER_RETURNED, offset),
        (ANSWER_ARRIVED, offset),
        (APPENDED, offset + 1),
        (FETCH_SENT, offset + 1),
        (FETCH_DEQUEUED, offset + 1),
        (FETCH_ARRIVED, offset + 1),
    )


def _record_stages(
    by_key: Mapping[tuple[str, int, int], Sequence[int]], woke: Mapping[int, Sequence[int]], followers: Sequence[int], offset: int, started: int, delivered: int
) -> dict[str, int] | None:
    def at(stage: str, at_offset: int, replica: int = -1, after: int = started) -> int | None:
        return _first_at_or_after(by_key.get((stage, at_offset, replica), ()), after)

    appended_at = at(APPEND, offset)
    high_watermark = at(HIGH_WATERMARK, offset + 1)
    acks_done = at(ACKS_DONE, offset + 1)
    if appended_at is None or high_watermark is None or acks_done is None or len(followers) < 2:
        return None
    paths = {}
    for replica in followers:
        times = [at(stage, stage_offset, replica, appended_at) for stage, stage_offset in _follower_path(offset)]
        if any(moment is None for moment in times):
            return None
        built = times[0]
        assert built is not None
        woke_at = _last_at_or_before(woke.get(replica, ()), built, appended_at)
        paths[replica] = [woke_at if woke_at is not None else appended_at, *times]
    last = max(paths, key=lambda replica: paths[replica][-1])
    moments = [appended_at, *paths[last], high_watermark, acks_done]
    other = min(paths[replica][-1] for replica in paths if replica != last)
    return {
        STAGES[0]: appended_at - started,
        **{STAGES[index + 1]: later - earlier for index, (earlier, later) in enumerate(zip(moments, moments[1:]))},
        STAGES[-1]: delivered - acks_done,
        OTHER_FOLLOWER: other - appended_at,
        TOTAL: delivered - started,
    }


def merge(first: Breakdown, second: Breakdown) -> Breakdown:
    """Both breakdowns' records together (of two topics, say)."""
    merged = Breakdown(records=first.records + second.records, incomplete=first.incomplete + second.incomplete)
    for part in (first, second):
        for name, durations in part.stages.items():
            merged.stages[name].extend(durations)
    return merged


def report(result: Breakdown) -> str:
    """One line per stage: p50 / p99 in ms over the records with every stamp."""
    lines = [f"replication stages of {result.records} records ({result.incomplete} left out: a stamp missing)", f"{'stage':44s} {'p50 ms':>8s} {'p99 ms':>8s}"]
    for name in (*STAGES, OTHER_FOLLOWER, TOTAL):
        durations = result.stages.get(name)
        if durations:
            summary = LatencySummary.from_nanoseconds(durations)
            lines.append(f"{name:44s} {summary.p50_ms:8.3f} {summary.p99_ms:8.3f}")
    return "\n".join(lines)
