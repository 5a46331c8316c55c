"""Usage metering with real processes: what two tenants produce and consume reaches ``__usage``
exactly, per tenant, topic and partition, and stays exact across a SIGTERM and a kill -9.

Brokers run with ``WEIR_BROKER_METERING_INTERVAL_MS`` (half-second windows). The expected
figures come from the partitions' files: each batch is appended once (idempotent producers)
and read once (each phase's records are consumed from where the phase began), so bytes and
records in and out of a partition equal its stored batches' sizes and record counts. The
rows are read back with an internal-token consumer and deduplicated by identity.

- SIGTERM: the stopping broker emits its open window before handing its leaderships away,
  so nothing is lost.
- kill -9: only the open window may be lost. A window closes every half second and is kept
  on disk until ``__usage`` acknowledges it, so traffic older than two windows is counted
  (also after the broker restarts and sends its kept windows again), and nothing is counted
  twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import pytest

from log_formats.log_files import LOG_SUFFIX, partition_directory_name
from tests.cluster.workload import produce_and_wait
from tests.support.real_cluster import ClusterTimings, RealCluster, TenantAccess
from tests.support.usage_topic import UsageReader
from webapp.catalog.models import Partition
from weir import Consumer, TopicPartition
from weir.consumer import consume_available
from weir.records import iter_batch_positions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(150)]

INTERVAL_MS = 500
TOPIC = "orders"
PARTITIONS = 3
TIMINGS = ClusterTimings(session_timeout_ms=2000)
READ_SECONDS = 30.0  # longest the usage rows may take to show the traffic
FETCH_WAIT_MS = 50  # the consumers' long polls
PartitionKey = tuple[str, str, int]  # (tenant id, topic, partition)


def leaders(tenant: TenantAccess) -> dict[int, int]:
    """partition -> leader (catalog) of the tenant's topic."""
    return dict(Partition.objects.filter(topic__tenant__public_id=tenant.tenant_id, topic__name=TOPIC).values_list("index", "leader"))


def client_config(cluster: RealCluster, tenant: TenantAccess, nodes=None) -> dict[str, object]:
    return {"bootstrap.servers": cluster.bootstrap_servers(nodes), "sasl.username": tenant.api_key, "sasl.password": tenant.api_secret}


def stored(cluster: RealCluster, tenant: TenantAccess, partition: int, node_id: int) -> tuple[int, int]:
    """(bytes, records) of every batch broker ``node_id`` stores for the partition."""
    directory = cluster.brokers[node_id].data_dir / partition_directory_name(f"{tenant.tenant_id}~{TOPIC}", partition)
    size = records = 0
    for path in sorted(directory.glob(f"*{LOG_SUFFIX}")):
        for _, header in iter_batch_positions(path.read_bytes()):
            size += header.size
            records += header.records_count
    return size, records


def expected_traffic(cluster: RealCluster, tenants: list[TenantAccess]) -> dict[PartitionKey, tuple[int, int]]:
    """What each partition's traffic must add up to: its stored (bytes, records), in and out alike."""
    totals = {}
    for tenant in tenants:
        for partition, leader in leaders(tenant).items():
            assert leader != -1, f"partition {partition} of {tenant.tenant_id} has no leader"
            totals[(tenant.tenant_id, TOPIC, partition)] = stored(cluster, tenant, partition, leader)
    return totals


def produce_phase(cluster: RealCluster, tenant: TenantAccess, name: str, partitions: Mapping[int, int], nodes=None) -> None:
    """``partitions[p]`` records of 100 bytes to each partition, in batches of a few records; every one acknowledged."""
    for partition, count in partitions.items():
        values = [f"{name}-{partition}-{index:05d}".encode().ljust(100, b".") for index in range(count)]
        results = produce_and_wait({**client_config(cluster, tenant, nodes), "linger.ms": 20, "batch.num.messages": 7}, TOPIC, partition, values)
        assert all(error is None for error, _ in results), [error for error, _ in results if error is not None][:3]


def consume_from(cluster: RealCluster, tenant: TenantAccess, starts: Mapping[int, int], ends: Mapping[int, int], nodes=None) -> None:
    """Read each partition from ``starts[p]`` (a batch boundary) to ``ends[p]`` once.

    A consumer always has a fetch parked at the brokers; after close() the broker still
    answers it when records arrive (and counts what it answered). Short long polls, and a
    pause after closing, let them expire before the next phase appends anything.
    """
    consumer = Consumer({**client_config(cluster, tenant, nodes), "enable.auto.commit": False, "fetch.wait.max.ms": FETCH_WAIT_MS})
    try:
        consumer.assign([TopicPartition(TOPIC, partition, starts[partition]) for partition in ends if ends[partition] > starts[partition]])
        positions = dict(starts)
        deadline = time.monotonic() + 30
        while any(positions[partition] < end for partition, end in ends.items()):
            assert time.monotonic() < deadline, f"consumer stuck at {positions}, ends {dict(ends)}"
            for message in consume_available(consumer, 500, 0.5):
                if message.error() is None:
                    positions[message.partition()] = message.offset() + 1
    finally:
        consumer.close()
    time.sleep(4 * FETCH_WAIT_MS / 1000)


def end_offsets(cluster: RealCluster, tenant: TenantAccess) -> dict[int, int]:
    return {partition: stored(cluster, tenant, partition, leader)[1] for partition, leader in leaders(tenant).items()}


def counted(reader: UsageReader) -> dict[PartitionKey, tuple[int, int, int, int]]:
    """(bytes in, records in, bytes out, records out) per partition, from the deduplicated rows."""
    return {key: (totals["bytes_in"], totals["records_in"], totals["bytes_out"], totals["records_out"]) for key, totals in reader.traffic().items()}


def at_least(values: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    return all(value >= least for value, least in zip(values, minimum, strict=True))


def exactly(expected: Mapping[PartitionKey, tuple[int, int]]) -> dict[PartitionKey, tuple[int, int, int, int]]:
    return {key: (size, records, size, records) for key, (size, records) in expected.items()}


def test_usage_rows_count_each_tenants_traffic_exactly_across_sigterm_and_kill(start_cluster, monkeypatch) -> None:
    monkeypatch.setenv("WEIR_BROKER_METERING_INTERVAL_MS", str(INTERVAL_MS))
    cluster = start_cluster(timings=TIMINGS)
    tenants = []
    for name in ("Acme", "Globex"):
        tenants.append(cluster.create_tenant(name))
        cluster.create_topic(TOPIC, PARTITIONS, 3)
    acme, globex = tenants
    reader = UsageReader(cluster.bootstrap_servers(), cluster.internal_token)
    try:
        # Phase 1: both tenants produce and consume; the rows add up exactly.
        produce_phase(cluster, acme, "a1", {0: 30, 1: 20, 2: 10})
        produce_phase(cluster, globex, "g1", {0: 5, 1: 15, 2: 25})
        for tenant in tenants:
            consume_from(cluster, tenant, {partition: 0 for partition in range(PARTITIONS)}, end_offsets(cluster, tenant))
        expected = expected_traffic(cluster, tenants)
        reader.read_until(lambda r: counted(r) == exactly(expected), READ_SECONDS, f"phase 1 traffic {expected}")
        assert all(row.produce_requests > 0 for row in reader.rows.values() if row.kind == "traffic" and row.records_in)

        # SIGTERM right after more traffic: the open window is emitted on the way down.
        stopping = leaders(acme)[0]
        starts = {tenant.tenant_id: end_offsets(cluster, tenant) for tenant in tenants}
        produce_phase(cluster, acme, "a2", {0: 12, 1: 12, 2: 12})
        produce_phase(cluster, globex, "g2", {0: 9, 1: 9, 2: 9})
        for tenant in tenants:
            consume_from(cluster, tenant, starts[tenant.tenant_id], end_offsets(cluster, tenant))
        assert cluster.terminate(stopping) == 0
        survivors = sorted(cluster.running_nodes())
        cluster.wait_until(lambda: all(leader in survivors for tenant in tenants for leader in leaders(tenant).values()), "leaders on the running brokers")
        expected = expected_traffic(cluster, tenants)
        reader.read_until(lambda r: counted(r) == exactly(expected), READ_SECONDS, f"traffic up to the SIGTERM of broker {stopping}: {expected}")

        # kill -9 of another leader: traffic older than two windows is counted, the open window may be lost, nothing twice.
        killed = leaders(globex)[0]
        before_kill = expected
        produce_phase(cluster, globex, "g3", {0: 8}, survivors)
        time.sleep(3 * INTERVAL_MS / 1000)  # the windows of that traffic close (and are kept on disk)
        settled = expected_traffic(cluster, tenants)
        produce_phase(cluster, globex, "g4", {0: 4}, survivors)
        cluster.kill(killed)
        after_kill = expected_traffic_from(cluster, tenants, killed)
        assert after_kill[(globex.tenant_id, TOPIC, 0)][1] == before_kill[(globex.tenant_id, TOPIC, 0)][1] + 12
        cluster.start_broker(killed)  # sends the windows it kept and had no acknowledgement for
        key = (globex.tenant_id, TOPIC, 0)
        reader.read_until(
            lambda r: at_least(counted(r)[key][:2], settled[key]), READ_SECONDS, f"the traffic of broker {killed} before its last windows: {settled[key]}"
        )
        time.sleep(4 * INTERVAL_MS / 1000)
        reader.read_available(1.0)
        final = counted(reader)
        assert at_least(final[key][:2], settled[key]) and at_least(after_kill[key], final[key][:2]), (
            f"counted {final[key]}, at least {settled[key]}, at most {after_kill[key]}"
        )
        assert final[key][2:] == before_kill[key], "bytes and records out of the partition"
        for other, totals in exactly(before_kill).items():
            if other != key:
                assert final[other] == totals, f"{other}: counted {final[other]}, expected {totals}"
        assert reader.conflicts == [], reader.conflicts[:3]
    finally:
        reader.close()


def expected_traffic_from(cluster: RealCluster, tenants: list[TenantAccess], node_id: int) -> dict[PartitionKey, tuple[int, int]]:
    """Like :func:`expected_traffic`, from the files of broker ``node_id`` (the killed leader holds every acknowledged batch)."""
    return {(tenant.tenant_id, TOPIC, partition): stored(cluster, tenant, partition, node_id) for tenant in tenants for partition in range(PARTITIONS)}
