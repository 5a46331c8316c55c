"""A broker whose disk fills up: produce fails cleanly, the log stays intact, space returning heals it.

The broker's data directory is a small tmpfs of its own (a real filesystem that really runs
out of space: ``write`` fails with ENOSPC part-way through a batch). Every produce after that
is refused with the retriable KAFKA_STORAGE_ERROR naming the cause, the process keeps
serving reads of everything acknowledged, and once the filesystem grows the same broker
takes appends again at the next offset — and after a restart its files hold exactly the
acknowledged records, no torn batch.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from weir import records
from weir.errors import ErrorCode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

TOPIC = "filling"
# Small segments: the disk fills in the middle of a segment and at a roll, both exercised.
CONFIGS = {"segment.bytes": "262144", "index.interval.bytes": "4096"}
VALUE = b"x" * 900
PER_BATCH = 40  # ~36 KiB per batch
DISK_BYTES = 2 * 1024 * 1024


def mount_tmpfs(path: Path, size: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({result.stderr.strip()}); the disk-full test needs root")


def resize_tmpfs(path: Path, size: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path):
    disk = tmp_path / "disk"
    mount_tmpfs(disk, DISK_BYTES)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def produce(client: RawBroker, batch_number: int):
    now = int(time.time() * 1000)
    values = [b"%d-%d:" % (batch_number, index) + VALUE for index in range(PER_BATCH)]
    return values, client.produce(TOPIC, 0, records.build_batch((now, None, value, None) for value in values))


def test_disk_full_refuses_produce_keeps_the_log_and_recovers_when_space_returns(small_disk: Path):
    broker = BrokerProcess(small_disk).start()
    client = RawBroker(broker.address)
    try:
        assert client.create_topic(TOPIC, 1, CONFIGS).error_code == 0
        acknowledged: list[bytes] = []
        refusal = None
        for batch_number in range(200):  # 200 x 36 KiB is far more than the 2 MiB disk
            values, result = produce(client, batch_number)
            if result.error_code != 0:
                refusal = result
                break
            assert result.base_offset == len(acknowledged)
            acknowledged.extend(values)
        assert refusal is not None, "the disk never filled"
        assert refusal.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert "No space left on device" in refusal.error_message

        # Still full: every further produce is refused the same way, nothing half-written.
        for batch_number in range(3):
            _, result = produce(client, 1000 + batch_number)
            assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert broker.is_running()
        assert [value for _, value in client.read_all(TOPIC, 0)] == acknowledged

        log = broker.read_log()
        assert "append refused, nothing stored" in log and "No space left on device" in log
        # Nothing half-written stays behind: the partition's files add up to whole batches.
        active = max((broker.data_dir / f"{TOPIC}-0").glob("*.log"))
        assert sum(header.size for _, header in records.iter_batch_positions(active.read_bytes())) == active.stat().st_size

        # Space returns: the same process appends at the next offset (one small batch, shorter
        # than what the failed write had put down before it was undone).
        resize_tmpfs(small_disk, 16 * DISK_BYTES)
        assert client.produce_values(TOPIC, 0, [b"space is back"]) == len(acknowledged)
        acknowledged.append(b"space is back")
        assert [value for _, value in client.read_all(TOPIC, 0)] == acknowledged
        client.close()

        # The files hold exactly that, after a clean stop and after kill -9 alike.
        assert broker.stop() == 0
        broker.start()
        client = RawBroker(broker.address)
        assert [value for _, value in client.read_all(TOPIC, 0)] == acknowledged
        client.close()
        broker.kill()
        broker.start()
        client = RawBroker(broker.address)
        assert [value for _, value in client.read_all(TOPIC, 0)] == acknowledged
        assert client.produce_values(TOPIC, 0, [b"after restart"]) == len(acknowledged)
        assert "Traceback" not in broker.read_log(), broker.read_log()[-3000:]
    finally:
        client.close()
        broker.stop()
