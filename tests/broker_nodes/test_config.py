from pathlib import Path

import pytest

from broker_nodes.config import BROKER_SETTINGS, TOPIC_DEFAULT_SETTINGS, BrokerConfigError, ListenAddress, environment_variable, load_broker_config
from weir.topic_config import TOPIC_CONFIGS


def load(configs=(), environment=None, listen="127.0.0.1:9092"):
    return load_broker_config(node_id=1, listen=listen, data_dir="/tmp/data", configs=list(configs), environment=environment or {})


def test_defaults_follow_kafka():
    config = load()
    assert config["auto.create.topics.enable"] is False
    assert config["num.partitions"] == 1
    assert config["default.replication.factor"] == 1
    assert config["message.max.bytes"] == 1048588
    assert config["socket.request.max.bytes"] == 104857600
    assert config["max.request.size"] == 8 * 1024 * 1024  # Kafka: 100 MiB per request; see the setting's help for why 8 MiB
    assert config["fetch.max.bytes"] == 57671680
    assert config["offsets.topic.num.partitions"] == 50
    assert config["offsets.retention.minutes"] == 10080
    assert config["log.retention.check.interval.ms"] == 300000
    assert config["num.io.threads"] == 16
    assert config.explicit == frozenset()


def test_every_topic_default_setting_maps_to_a_topic_config_with_its_default():
    for setting, topic_config in TOPIC_DEFAULT_SETTINGS.items():
        assert topic_config in TOPIC_CONFIGS
        assert BROKER_SETTINGS[setting].default == TOPIC_CONFIGS[topic_config].default


def test_command_line_setting_is_typed_and_explicit():
    config = load(["num.partitions=3", "auto.create.topics.enable=true"])
    assert config["num.partitions"] == 3
    assert config["auto.create.topics.enable"] is True
    assert config.explicit == {"num.partitions", "auto.create.topics.enable"}


def test_environment_variable_sets_a_setting():
    assert environment_variable("auto.create.topics.enable") == "WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE"
    config = load(environment={"WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE": "true", "PATH": "/bin"})
    assert config["auto.create.topics.enable"] is True


def test_stack_level_variables_with_the_broker_prefix_are_ignored():
    config = load(environment={"WEIR_BROKER_BASE_PORT": "19092"})
    assert config.explicit == frozenset()


def test_command_line_beats_environment():
    config = load(["num.partitions=4"], environment={"WEIR_BROKER_NUM_PARTITIONS": "2"})
    assert config["num.partitions"] == 4


@pytest.mark.parametrize(
    "configs, environment, fragment",
    [
        (["no.such.key=1"], {}, "unknown broker setting 'no.such.key'"),
        (["num.partitions"], {}, "expected key=value"),
        (["num.partitions=many"], {}, "expected a value of type INT"),
        (["num.partitions=0"], {}, "must be at least 1"),
        (["auto.create.topics.enable=maybe"], {}, "BOOLEAN"),
        ([], {"WEIR_BROKER_NO_SUCH_KEY": "1"}, "WEIR_BROKER_NO_SUCH_KEY"),
    ],
)
def test_bad_settings_raise_an_error_naming_the_problem(configs, environment, fragment):
    with pytest.raises(BrokerConfigError) as raised:
        load(configs, environment)
    assert fragment in str(raised.value)


def test_topic_config_defaults_contain_only_explicit_topic_settings():
    config = load(["log.segment.bytes=2048", "log.cleanup.policy=compact,delete", "num.partitions=2"])
    assert config.topic_config_defaults() == {"segment.bytes": "2048", "cleanup.policy": "compact,delete"}


@pytest.mark.parametrize("text, host, port", [("127.0.0.1:9092", "127.0.0.1", 9092), ("[::1]:0", "::1", 0), ("broker-1:19092", "broker-1", 19092)])
def test_listen_address_parses_host_and_port(text, host, port):
    assert ListenAddress.parse(text) == ListenAddress(host, port)


@pytest.mark.parametrize("text", ["9092", "host:", ":9092", "host:99999", "host:port"])
def test_listen_address_rejects_malformed_text(text):
    with pytest.raises(BrokerConfigError):
        ListenAddress.parse(text)


def test_wildcard_listen_host_advertises_localhost_unless_told_otherwise():
    assert load(listen="0.0.0.0:9092").host_for_clients == "localhost"
    advertised = load_broker_config(node_id=1, listen="0.0.0.0:9092", data_dir=Path("/tmp"), advertised_host="broker.example")
    assert advertised.host_for_clients == "broker.example"
