"""The broker as a real process: startup, signals, exit codes, durability across restarts."""

import re
import subprocess
import sys

import grpc

from broker_nodes.storage.file_names import CLEAN_SHUTDOWN_MARKER
from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.broker_nodes.server.helpers import batch, create_topic, fetch, produce
from tests.broker_nodes.server.test_committed_offsets import commit, committed
from weir.records import iter_records


def stub_for(process):
    channel = grpc.insecure_channel(process.address)
    return channel, broker_pb2_grpc.BrokerStub(channel)


def test_sigterm_exits_zero_and_leaves_the_clean_shutdown_marker(broker):
    assert broker.stop() == 0
    assert (broker.data_dir / CLEAN_SHUTDOWN_MARKER).exists()
    log = broker.read_log()
    assert "shutting down" in log
    # Every log line starts with a timestamp.
    assert re.search(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} ", log, re.MULTILINE)


def test_data_and_committed_offsets_survive_a_restart(broker_factory):
    process = broker_factory(configs={"offsets.topic.num.partitions": "5"})
    channel, stub = stub_for(process)
    with channel:
        create_topic(stub, "orders")
        produce(stub, "orders", batch([b"kept"]))
        assert commit(stub, "billing", {("orders", 0): (1, "meta")}).error_code == 0
    process.restart()
    channel, stub = stub_for(process)
    with channel:
        assert [record.value for record in iter_records(fetch(stub, "orders", 0).records)] == [b"kept"]
        _, offsets = committed(stub, "billing")
        assert offsets == {("orders", 0): (1, "meta")}
        offsets_topic = stub.Metadata(broker_pb2.MetadataRequest(topics=["__consumer_offsets"])).topics[0]
        assert len(offsets_topic.partitions) == 5


def test_unknown_setting_exits_with_code_two_and_names_it(tmp_path):
    command = [sys.executable, "-m", "broker_nodes", "--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), "--config", "no.such.setting=1"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    assert "no.such.setting" in finished.stderr


def test_bad_environment_value_exits_with_code_two(tmp_path):
    command = [sys.executable, "-m", "broker_nodes", "--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path)]
    environment = {"PATH": "/usr/bin:/bin", "WEIR_BROKER_NUM_PARTITIONS": "several"}
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment)
    assert finished.returncode == 2
    assert "WEIR_BROKER_NUM_PARTITIONS" in finished.stderr
