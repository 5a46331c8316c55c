"""ConfigResource's length is the number of configs set, as confluent-kafka's (its adminapi.py
delta_alter_configs example prints ``len(resource)``); it still hashes and compares by type and name."""

from __future__ import annotations

from weir.admin import ConfigResource


def test_len_counts_the_configs_set_and_identity_stays_type_and_name() -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    assert len(resource) == 0 and not resource  # as confluent-kafka's: test for None with `is None`
    resource.set_config("retention.ms", "1000")
    resource.set_config("retention.ms", "2000", overwrite=False)
    resource.set_config("cleanup.policy", "compact")
    assert len(resource) == 2 and resource.set_config_dict["retention.ms"] == "1000"
    assert {resource: 1}[ConfigResource("topic", "orders")] == 1
