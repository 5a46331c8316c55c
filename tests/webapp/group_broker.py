"""A real broker behind the control plane for the consumer group pages' and API's
end-to-end tests: it knows the internal token (so it accepts the control plane's tenant tokens),
is the registered broker 1 and the control plane's bootstrap server, and gets its cluster
map (the internal topics, among them a small ``__consumer_offsets``, and tenants' topics)
through the provisioning job, as in production.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.group_broker import GROUP_BROKER_CONFIGS
from tests.support.processes import BrokerProcess
from webapp.accounts.identity import Actor
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.controller.epoch import become_active
from webapp.controller.internal_topics import ensure_internal_topics
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning import jobs
from webapp.provisioning.models import JobState
from webapp.tenant_clients import client_config


@contextmanager
def control_plane_broker(data_dir: Path, settings: Any, configs: Mapping[str, str] | None = None) -> Iterator[BrokerProcess]:
    """A broker process registered as node 1 (replacing a fixture's placeholder) and set as
    ``settings.WEIR_BOOTSTRAP_SERVERS``, with the internal topics in the catalog (pushed
    with the first topic); stopped at the end. ``configs`` add broker settings
    (``security.required``...)."""
    settings.WEIR_OFFSETS_TOPIC_NUM_PARTITIONS = 2
    settings.WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS = 1
    settings.WEIR_USAGE_TOPIC_NUM_PARTITIONS = 1
    broker = BrokerProcess(data_dir, configs={**GROUP_BROKER_CONFIGS, **(configs or {})}, env={"WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN}).start()
    try:
        BrokerNode.objects.update_or_create(node_id=broker.node_id, defaults={"host": "127.0.0.1", "port": broker.port, "state": BrokerState.ONLINE})
        settings.WEIR_BOOTSTRAP_SERVERS = broker.address
        ensure_internal_topics(controller_epoch=become_active())
        yield broker
    finally:
        broker.stop()


def provision_topic(actor: Actor, name: str, partitions: int) -> None:
    """Create the topic with the domain action and run its provisioning job now."""
    change = do_create_topic(actor, check_create_topic(actor, name, partitions, 1, {}))
    assert change.job is not None
    outcome = jobs.run_attempt(change.job.pk)
    assert outcome.state == JobState.SUCCEEDED, outcome


def tenant_client_config(actor: Actor) -> dict[str, Any]:
    """SDK configuration of an application of ``actor``'s tenant (the control plane's own: a tenant token)."""
    return client_config(actor.tenant.public_id)
