"""What the containers run besides the processes themselves: the StatefulSet broker entry point,
the one-shot health probe, and Celery's transport when processes span machines."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.server.main import parse_arguments
from deploy.broker_entrypoint import EntrypointError, broker_command, ordinal_of
from deploy.healthcheck import main as healthcheck
from tests.support.processes import BrokerProcess, free_port
from webapp.runtime import celery_broker_url

POD = {"WEIR_POD_NAME": "weir-broker-4", "WEIR_ADVERTISED_DOMAIN": "weir-brokers.weir.svc.cluster.local"}
ARGUMENTS = ["--listen", "0.0.0.0:9092", "--data-dir", "/var/lib/weir/broker"]


def test_a_pods_ordinal_gives_its_node_id_and_its_stable_name_the_advertised_host() -> None:
    command = broker_command(POD, ARGUMENTS, python="/usr/local/bin/python")
    assert command[:3] == ["/usr/local/bin/python", "-m", "broker_nodes"]
    config = parse_arguments(command[3:], {})
    assert config.node_id == 5
    assert config.advertised_host == "weir-broker-4.weir-brokers.weir.svc.cluster.local"
    assert parse_arguments(broker_command({**POD, "WEIR_NODE_ID_BASE": "100"}, ARGUMENTS)[3:], {}).node_id == 104
    # Without a domain the broker advertises its listen host, as when run by hand.
    assert "--advertised-host" not in broker_command({"HOSTNAME": "weir-broker-0"}, ARGUMENTS)


@pytest.mark.parametrize(
    ("environment", "arguments", "message"),
    [
        ({"WEIR_POD_NAME": "weir-broker"}, ARGUMENTS, "does not end in -<ordinal>"),
        ({}, ARGUMENTS, "neither WEIR_POD_NAME nor HOSTNAME"),
        ({**POD, "WEIR_NODE_ID_BASE": "one"}, ARGUMENTS, "WEIR_NODE_ID_BASE must be a whole number"),
        (POD, [*ARGUMENTS, "--node-id", "7"], "--node-id is derived from the pod name"),
        (POD, [*ARGUMENTS, "--advertised-host=elsewhere"], "--advertised-host is derived from the pod name"),
    ],
)
def test_the_entrypoint_refuses_what_would_give_a_broker_the_wrong_identity(environment: dict[str, str], arguments: list[str], message: str) -> None:
    with pytest.raises(EntrypointError, match=message):
        broker_command(environment, arguments)


def test_ordinals_are_the_last_number_of_the_name() -> None:
    assert ordinal_of("weir-broker-0") == 0 and ordinal_of("my-2nd-set-12") == 12


def test_healthcheck_says_whether_a_broker_serves(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "broker").start()
    try:
        assert healthcheck(["grpc", broker.address]) == 0
        # A standalone broker has no controller service.
        assert healthcheck(["grpc", broker.address, "--service", "weir.v1.Controller"]) == 1
    finally:
        broker.stop()
    assert healthcheck(["grpc", broker.address]) == 1
    assert healthcheck(["http", f"http://127.0.0.1:{free_port()}/readyz"]) == 1


def test_celery_uses_redis_unprobed_when_the_filesystem_fallback_is_off(tmp_path: Path) -> None:
    nothing_there = f"redis://127.0.0.1:{free_port()}/0"
    assert celery_broker_url(nothing_there, tmp_path, filesystem_fallback=False) == (nothing_there, {})
    assert celery_broker_url(nothing_there, tmp_path)[0] == "filesystem://"
