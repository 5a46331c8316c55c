"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for both front doors (gRPC and Kafka's protocol).

Shapes are ``broker.proto``'s config messages (the controller speaks them for forwarded
changes, see ``requests.topics``). TOPIC resources are the caller's plain topic names; BROKER
resources are this broker's node id (or empty for its defaults). Reading topic configs needs
DESCRIBE_CONFIGS on the topic, reading broker configs DESCRIBE_CONFIGS on the cluster; a
tenant's changes are authorized with ALTER_CONFIGS and forwarded to the controller. Per-resource
outcomes are Kafka error codes in the answer, in the request's order.

Kafka's incremental APPEND and SUBTRACT (on LIST configs) are resolved here into a SET of the
whole list against the topic's current value, so the controller and the registry only ever see
SET and DELETE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from broker_nodes.config import TOPIC_DEFAULT_SETTINGS
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.errors import ClusterAuthorizationError, TopicAuthorizationError
from broker_nodes.server import request_parsing, topic_forwarding
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from broker_nodes.server.topic_admin import SOURCE_DEFAULT_CONFIG, SOURCE_DYNAMIC_TOPIC_CONFIG, SOURCE_STATIC_BROKER_CONFIG, ConfigChange, ConfigDescription
from broker_nodes.topic_registry import UnknownTopicOrPartitionError
from grpc_protos.weir.v1 import broker_pb2
from weir.topic_config import TOPIC_CONFIGS, InvalidConfigError

from .topics import check_local_topic_admin_allowed, topic_admin_controller


class IncrementalOp(IntEnum):
    """Kafka's IncrementalAlterConfigs operation codes."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class IncrementalChange:
    name: str
    value: str | None
    op: IncrementalOp


def describe_configs(broker: Broker, call: CallContext, request: broker_pb2.DescribeConfigsRequest) -> broker_pb2.DescribeConfigsResponse:
    """Every config (or the named ones) of each resource with its value and source, or why not."""
    request_parsing.config_resources(request.resources)
    results = []
    for resource in request.resources:
        try:
            descriptions = _describe(broker, call, resource)
            entries = [config_entry(description, request.include_documentation) for description in descriptions]
            results.append(broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, configs=entries))
        except Exception as error:  # this resource's answer
            results.append(resource_error(resource.type, resource.name, error))
    return broker_pb2.DescribeConfigsResponse(resources=results)


def _describe(broker: Broker, call: CallContext, resource: broker_pb2.ConfigResourceRef) -> list[ConfigDescription]:
    admin = broker.topic_admin
    if resource.type == broker_pb2.RESOURCE_TYPE_TOPIC:
        if not call.may(Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, resource.name):
            raise TopicAuthorizationError(resource.name, "describe the configs of")
        try:
            return admin.describe_topic_configs(call.qualify(resource.name), list(resource.config_names))
        except UnknownTopicOrPartitionError:
            raise UnknownTopicOrPartitionError(resource.name) from None  # the plain name: never another tenant's prefix
    if resource.type == broker_pb2.RESOURCE_TYPE_BROKER:
        if not call.may(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
            raise ClusterAuthorizationError("describe the broker configs")
        return admin.describe_broker_configs(resource.name, list(resource.config_names))
    raise InvalidRequestError(f"resource type {resource.type} is not TOPIC (2) or BROKER (4)")


def config_entry(description: ConfigDescription, include_documentation: bool) -> broker_pb2.ConfigEntryResult:
    return broker_pb2.ConfigEntryResult(
        name=description.name,
        value=description.value,
        read_only=description.read_only,
        is_default=description.is_default,
        is_sensitive=False,
        source=description.source,
        documentation=description.documentation if include_documentation else "",
        type=description.type,
    )


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str
    source: int  # a ConfigSource of broker.proto


# Topic config -> the broker setting that sets its default for every topic (Kafka's synonyms).
_BROKER_SETTING_OF_TOPIC_CONFIG = {topic_config: setting for setting, topic_config in TOPIC_DEFAULT_SETTINGS.items()}


def topic_config_synonyms(broker: Broker, entry: broker_pb2.ConfigEntryResult) -> list[ConfigSynonym]:
    """Where a topic config's value could come from, in precedence order, as Kafka's DescribeConfigs
    synonyms list them: the topic's override (when it has one), the broker-wide default set for this
    broker under the broker setting's name (when set), and the built-in default."""
    synonyms = []
    if entry.source == SOURCE_DYNAMIC_TOPIC_CONFIG:
        synonyms.append(ConfigSynonym(entry.name, entry.value, SOURCE_DYNAMIC_TOPIC_CONFIG))
    setting = _BROKER_SETTING_OF_TOPIC_CONFIG.get(entry.name)
    if setting is not None and setting in broker.config.explicit:
        synonyms.append(ConfigSynonym(setting, broker.config.describe_value(setting), SOURCE_STATIC_BROKER_CONFIG))
    key = TOPIC_CONFIGS.get(entry.name)
    if key is not None:
        synonyms.append(ConfigSynonym(setting or entry.name, key.default, SOURCE_DEFAULT_CONFIG))
    return synonyms


def config_synonyms(broker: Broker, resource_type: int, entry: broker_pb2.ConfigEntryResult) -> list[ConfigSynonym]:
    """A described config's synonyms for either door: a topic config's (:func:`topic_config_synonyms`);
    a broker setting, fixed for the life of the process, is its own only synonym."""
    if resource_type == broker_pb2.RESOURCE_TYPE_TOPIC:
        return topic_config_synonyms(broker, entry)
    return [ConfigSynonym(entry.name, entry.value, int(entry.source))]


def config_synonym_messages(broker: Broker, resource_type: int, entry: broker_pb2.ConfigEntryResult) -> list[broker_pb2.ConfigSynonym]:
    # The .pyi takes ConfigSource members only; the sources are its numbers.
    return [
        broker_pb2.ConfigSynonym(name=synonym.name, value=synonym.value, source=synonym.source)  # type: ignore[arg-type]
        for synonym in config_synonyms(broker, resource_type, entry)
    ]


def resource_error(resource_type: broker_pb2.ResourceType, name: str, error: Exception) -> broker_pb2.ConfigResourceResult:
    code, message = error_code_and_message(error)
    return broker_pb2.ConfigResourceResult(type=resource_type, name=name, error_code=code, error_message=message)


def alter_configs(broker: Broker, call: CallContext, request: broker_pb2.AlterConfigsRequest) -> broker_pb2.AlterConfigsResponse:
    """Apply each resource's config changes (replacing every override, or incrementally), or say why not."""
    request_parsing.config_resources(request.resources)
    controller = topic_admin_controller(broker, call)
    if controller is not None:
        return topic_forwarding.alter_configs(controller, call, request)
    results = []
    for resource in request.resources:
        try:
            check_local_topic_admin_allowed(broker, call, resource.name)
            if resource.type == broker_pb2.RESOURCE_TYPE_BROKER:
                raise InvalidRequestError("broker settings cannot be changed at run time; set them with --config or WEIR_BROKER_* and restart")
            if resource.type != broker_pb2.RESOURCE_TYPE_TOPIC:
                raise InvalidRequestError(f"resource type {resource.type} is not TOPIC (2) or BROKER (4)")
            changes = [ConfigChange(entry.name, entry.value, entry.op == broker_pb2.ALTER_CONFIG_OP_DELETE) for entry in resource.configs]
            broker.topic_admin.alter_topic_configs(resource.name, changes, incremental=resource.incremental, validate_only=request.validate_only)
            results.append(broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name))
        except Exception as error:  # this resource's answer
            results.append(resource_error(resource.type, resource.name, error))
    return broker_pb2.AlterConfigsResponse(resources=results)


def incremental_resource(
    broker: Broker, call: CallContext, resource_type: int, name: str, changes: Sequence[IncrementalChange]
) -> broker_pb2.AlterConfigsResource:
    """An incremental AlterConfigsResource of SET and DELETE only: APPEND and SUBTRACT become a SET of the whole list.

    Raises InvalidConfigError for APPEND/SUBTRACT on a config that is not a LIST, or on an
    unknown config; UnknownTopicOrPartitionError / TopicAuthorizationError when the topic's
    current value cannot be read by the caller.
    """
    configs = []
    current: dict[str, str] | None = None
    for change in changes:
        if change.op in (IncrementalOp.SET, IncrementalOp.DELETE):
            op = broker_pb2.ALTER_CONFIG_OP_DELETE if change.op == IncrementalOp.DELETE else broker_pb2.ALTER_CONFIG_OP_SET
            configs.append(broker_pb2.AlterableConfig(name=change.name, value=change.value or "", op=op))
            continue
        key = TOPIC_CONFIGS.get(change.name)
        if resource_type != broker_pb2.RESOURCE_TYPE_TOPIC or key is None or key.type != "LIST":
            raise InvalidConfigError(change.name, change.value, f"{change.op.name} applies only to a topic config of type LIST")
        if current is None:
            current = _current_topic_values(broker, call, name)
        members = [member for member in current.get(change.name, "").split(",") if member]
        given = [member.strip() for member in (change.value or "").split(",") if member.strip()]
        if change.op == IncrementalOp.APPEND:
            members += [member for member in given if member not in members]
        else:
            members = [member for member in members if member not in given]
        configs.append(broker_pb2.AlterableConfig(name=change.name, value=",".join(members), op=broker_pb2.ALTER_CONFIG_OP_SET))
    # The .pyi takes ResourceType members only; protobuf takes any int, here also Kafka's resource type code (kio).
    return broker_pb2.AlterConfigsResource(type=resource_type, name=name, configs=configs, incremental=True)  # type: ignore[arg-type]


_LIST_OPERATIONS = {broker_pb2.ALTER_CONFIG_OP_APPEND: IncrementalOp.APPEND, broker_pb2.ALTER_CONFIG_OP_SUBTRACT: IncrementalOp.SUBTRACT}


def resolve_list_operations(
    broker: Broker, call: CallContext, resources: Sequence[broker_pb2.AlterConfigsResource]
) -> list[broker_pb2.AlterConfigsResource | broker_pb2.ConfigResourceResult]:
    """The gRPC AlterConfigs' resources with APPEND/SUBTRACT resolved (:func:`incremental_resource`),
    in order; a resource that cannot be resolved (APPEND outside an incremental request, to a config
    that is not a LIST, of a topic the caller cannot read) is its error result instead."""
    resolved: list[broker_pb2.AlterConfigsResource | broker_pb2.ConfigResourceResult] = []
    for resource in resources:
        if not any(config.op in _LIST_OPERATIONS for config in resource.configs):
            resolved.append(resource)
            continue
        try:
            if not resource.incremental:
                raise InvalidRequestError("APPEND and SUBTRACT apply only to an incremental change (incremental_alter_configs)")
            changes = [
                IncrementalChange(config.name, config.value, _LIST_OPERATIONS.get(config.op) or IncrementalOp(int(config.op))) for config in resource.configs
            ]
            resolved.append(incremental_resource(broker, call, resource.type, resource.name, changes))
        except Exception as error:  # this resource's answer
            resolved.append(resource_error(resource.type, resource.name, error))
    return resolved


def _current_topic_values(broker: Broker, call: CallContext, name: str) -> dict[str, str]:
    if not call.may(Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name) and not call.may(Operation.ALTER_CONFIGS, ResourceType.TOPIC, name):
        raise TopicAuthorizationError(name, "alter the configs of")
    try:
        return {description.name: description.value for description in broker.topic_admin.describe_topic_configs(call.qualify(name))}
    except UnknownTopicOrPartitionError:
        raise UnknownTopicOrPartitionError(name) from None
