"""The broker process on SIGTERM fsyncs every partition before it exits, and refuses an unknown
log format by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc

from broker_nodes.storage.checkpoints import OffsetCheckpointFile
from broker_nodes.storage.file_names import RECOVERY_POINT_CHECKPOINT
from grpc_protos.weir.v1 import broker_pb2_grpc
from tests.broker_nodes.server.helpers import batch, create_topic, produce

PARTITIONS = 3


def test_sigterm_flushes_every_partition_to_its_log_end(broker_factory) -> None:  # type: ignore[no-untyped-def]
    # Nothing is fsynced while the broker runs (no flush.messages / flush.ms, no segment roll),
    # so a recovery point at the log end can only come from the shutdown's flush.
    process = broker_factory()
    with grpc.insecure_channel(process.address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        create_topic(stub, "durable", partitions=PARTITIONS)
        for partition in range(PARTITIONS):
            produce(stub, "durable", batch([b"x"] * (partition + 2)), partition=partition)
    assert process.stop() == 0
    recovery_points = OffsetCheckpointFile(Path(process.data_dir) / RECOVERY_POINT_CHECKPOINT).read()
    assert {partition: recovery_points[("durable", partition)] for partition in range(PARTITIONS)} == {0: 2, 1: 3, 2: 4}


def test_unknown_log_format_exits_with_code_two_and_names_it(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "broker_nodes", "--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "WEIR_LOG_FORMAT": "yaml"})
    assert finished.returncode == 2
    assert "WEIR_LOG_FORMAT must be one of text, json, not 'yaml'" in finished.stderr
