"""The gRPC ``weir.v1.Broker`` service: parse the request, call the broker's logic, build the response.

Servicer methods hold no logic of their own. Per-partition outcomes come back as values or
exceptions and are turned into Kafka error codes by ``server.errors``; a malformed request
is refused as a whole with INVALID_ARGUMENT; an unexpected exception is logged and answered
with INTERNAL, and the broker keeps serving.
"""

from __future__ import annotations

import functools
import logging
from typing import Callable, Iterable, TypeVar

import grpc

from broker_nodes.coordinator.offset_store import OffsetCommitEntry
from broker_nodes.replica_manager import LEADER_EPOCH, FetchPartitionResult
from broker_nodes.server import request_parsing
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import BrokerNotReadyError, InvalidRequestError, error_code_and_message, grpc_status
from broker_nodes.server.topic_admin import ConfigChange, ConfigDescription
from broker_nodes.topic_registry import TopicMetadata
from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc

logger = logging.getLogger(__name__)

Request = TypeVar("Request")
Response = TypeVar("Response")
Item = TypeVar("Item")

NO_ERROR = 0


def _handler(method: Callable[["BrokerServicer", Request], Response]) -> Callable[["BrokerServicer", Request, grpc.ServicerContext], Response]:
    """Wrap a servicer method: refuse calls until the broker is ready, and map escaping errors to a status."""

    @functools.wraps(method)
    def handle(self: "BrokerServicer", request: Request, context: grpc.ServicerContext) -> Response:
        try:
            if not self.broker.ready:
                raise BrokerNotReadyError("the broker is starting (recovering its logs) or shutting down")
            return method(self, request)
        except (InvalidRequestError, BrokerNotReadyError) as error:
            context.abort(grpc_status(error), str(error))
        except Exception as error:
            logger.exception("%s failed unexpectedly", method.__name__)
            context.abort(grpc_status(error), f"unexpected server error: {type(error).__name__}: {error}")
        raise AssertionError("context.abort always raises")

    return handle


def _group_by_topic(items: Iterable[tuple[str, Item]]) -> dict[str, list[Item]]:
    grouped: dict[str, list[Item]] = {}
    for topic, item in items:
        grouped.setdefault(topic, []).append(item)
    return grouped


class BrokerServicer(broker_pb2_grpc.BrokerServicer):
    """Thin adapter from ``broker.proto`` messages to :class:`Broker`. Thread-safe (stateless)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        config = broker.config
        self._fetch_max_bytes = int(config["fetch.max.bytes"])  # type: ignore[call-overload]
        self._partition_max_bytes = int(config["max.partition.fetch.bytes"])  # type: ignore[call-overload]
        self._node = broker_pb2.BrokerNode(node_id=config.node_id, host=config.host_for_clients, port=0, rack=config.rack)

    def set_port(self, port: int) -> None:
        """The port clients reach this broker on (known once the server is bound)."""
        self._node.port = port

    # ------------------------------------------------------------------ metadata and topic admin

    @_handler
    def Metadata(self, request: broker_pb2.MetadataRequest) -> broker_pb2.MetadataResponse:
        names = list(dict.fromkeys(request.topics))  # repeated names are answered once, as Kafka does
        results = self.broker.topic_admin.describe_topics(names, allow_auto_create=request.allow_auto_topic_creation)
        topics = []
        for index, result in enumerate(results):
            if isinstance(result, TopicMetadata):
                topics.append(self._topic_metadata(result))
            else:
                # Only named topics can fail, so ``names`` lines up with ``results`` here.
                code, message = error_code_and_message(result)
                topics.append(broker_pb2.TopicMetadata(error_code=code, error_message=message, name=names[index]))
        node_id = self.broker.config.node_id
        return broker_pb2.MetadataResponse(brokers=[self._node], cluster_id=self.broker.cluster_id, controller_id=node_id, topics=topics)

    def _topic_metadata(self, topic: TopicMetadata) -> broker_pb2.TopicMetadata:
        node_id = self.broker.config.node_id
        partitions = [
            broker_pb2.PartitionMetadata(partition=partition, leader_id=node_id, leader_epoch=LEADER_EPOCH, replicas=[node_id], isr=[node_id])
            for partition in range(topic.partitions)
        ]
        return broker_pb2.TopicMetadata(name=topic.name, is_internal=topic.internal, partitions=partitions, topic_id=topic.topic_id)

    @_handler
    def CreateTopics(self, request: broker_pb2.CreateTopicsRequest) -> broker_pb2.CreateTopicsResponse:
        request_parsing.require_nonempty(request.topics, "topic")
        request_parsing.require_unique((topic.name for topic in request.topics), "topic")
        results = []
        for creatable in request.topics:
            request_parsing.require_unique((entry.name for entry in creatable.configs), f"config of topic {creatable.name!r}")
            try:
                topic = self.broker.topic_admin.create_topic(
                    creatable.name,
                    creatable.num_partitions,
                    creatable.replication_factor,
                    {entry.name: entry.value for entry in creatable.configs},
                    validate_only=request.validate_only,
                )
                results.append(
                    broker_pb2.TopicResult(name=topic.name, topic_id=topic.topic_id, num_partitions=topic.partitions, replication_factor=topic.replication_factor)
                )
            except Exception as error:
                results.append(self._topic_error(creatable.name, error))
        return broker_pb2.CreateTopicsResponse(topics=results)

    @_handler
    def DeleteTopics(self, request: broker_pb2.DeleteTopicsRequest) -> broker_pb2.DeleteTopicsResponse:
        results = []
        for name in request_parsing.topic_names(request.topics, required=True):
            try:
                topic = self.broker.topic_admin.delete_topic(name)
                results.append(broker_pb2.TopicResult(name=name, topic_id=topic.topic_id, num_partitions=topic.partitions, replication_factor=topic.replication_factor))
            except Exception as error:
                results.append(self._topic_error(name, error))
        return broker_pb2.DeleteTopicsResponse(topics=results)

    @_handler
    def CreatePartitions(self, request: broker_pb2.CreatePartitionsRequest) -> broker_pb2.CreatePartitionsResponse:
        request_parsing.topic_names([topic.name for topic in request.topics], required=True)
        results = []
        for entry in request.topics:
            try:
                topic = self.broker.topic_admin.create_partitions(entry.name, entry.count, validate_only=request.validate_only)
                results.append(broker_pb2.TopicResult(name=topic.name, topic_id=topic.topic_id, num_partitions=topic.partitions, replication_factor=topic.replication_factor))
            except Exception as error:
                results.append(self._topic_error(entry.name, error))
        return broker_pb2.CreatePartitionsResponse(topics=results)

    @staticmethod
    def _topic_error(name: str, error: Exception) -> broker_pb2.TopicResult:
        code, message = error_code_and_message(error)
        return broker_pb2.TopicResult(name=name, error_code=code, error_message=message)

    # ------------------------------------------------------------------ configs

    @_handler
    def DescribeConfigs(self, request: broker_pb2.DescribeConfigsRequest) -> broker_pb2.DescribeConfigsResponse:
        request_parsing.config_resources(request.resources)
        admin = self.broker.topic_admin
        results = []
        for resource in request.resources:
            try:
                if resource.type == broker_pb2.RESOURCE_TYPE_TOPIC:
                    descriptions = admin.describe_topic_configs(resource.name, list(resource.config_names))
                elif resource.type == broker_pb2.RESOURCE_TYPE_BROKER:
                    descriptions = admin.describe_broker_configs(resource.name, list(resource.config_names))
                else:
                    raise InvalidRequestError(f"resource type {resource.type} is not TOPIC (2) or BROKER (4)")
                entries = [self._config_entry(description, request.include_documentation) for description in descriptions]
                results.append(broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, configs=entries))
            except Exception as error:
                results.append(self._resource_error(resource.type, resource.name, error))
        return broker_pb2.DescribeConfigsResponse(resources=results)

    @staticmethod
    def _config_entry(description: ConfigDescription, include_documentation: bool) -> broker_pb2.ConfigEntryResult:
        return broker_pb2.ConfigEntryResult(
            name=description.name,
            value=description.value,
            read_only=description.read_only,
            is_default=description.is_default,
            is_sensitive=False,
            source=description.source,  # type: ignore[arg-type]
            documentation=description.documentation if include_documentation else "",
            type=description.type,
        )

    @_handler
    def AlterConfigs(self, request: broker_pb2.AlterConfigsRequest) -> broker_pb2.AlterConfigsResponse:
        request_parsing.config_resources(request.resources)
        results = []
        for resource in request.resources:
            try:
                if resource.type == broker_pb2.RESOURCE_TYPE_BROKER:
                    raise InvalidRequestError("broker settings cannot be changed at run time; set them with --config or WEIR_BROKER_* and restart")
                if resource.type != broker_pb2.RESOURCE_TYPE_TOPIC:
                    raise InvalidRequestError(f"resource type {resource.type} is not TOPIC (2) or BROKER (4)")
                changes = [ConfigChange(entry.name, entry.value, entry.op == broker_pb2.ALTER_CONFIG_OP_DELETE) for entry in resource.configs]
                self.broker.topic_admin.alter_topic_configs(resource.name, changes, incremental=resource.incremental, validate_only=request.validate_only)
                results.append(broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name))
            except Exception as error:
                results.append(self._resource_error(resource.type, resource.name, error))
        return broker_pb2.AlterConfigsResponse(resources=results)

    @staticmethod
    def _resource_error(resource_type: int, name: str, error: Exception) -> broker_pb2.ConfigResourceResult:
        code, message = error_code_and_message(error)
        return broker_pb2.ConfigResourceResult(type=resource_type, name=name, error_code=code, error_message=message)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ produce and fetch

    @_handler
    def Produce(self, request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse:
        entries = request_parsing.produce_entries(request)
        outcomes = self.broker.replica_manager.append_records(request.acks, entries, transactional_id=request.transactional_id)
        responses = []
        for (topic, partition, _), outcome in zip(entries, outcomes):
            if isinstance(outcome, Exception):
                code, message = error_code_and_message(outcome)
                response = broker_pb2.ProducePartitionResponse(partition=partition, error_code=code, error_message=message, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            else:
                response = broker_pb2.ProducePartitionResponse(
                    partition=partition, base_offset=outcome.first_offset, log_append_time_ms=outcome.log_append_time_ms, log_start_offset=outcome.log_start_offset
                )
            responses.append((topic, response))
        return broker_pb2.ProduceResponse(
            topics=[broker_pb2.ProduceTopicResponse(topic=topic, partitions=partitions) for topic, partitions in _group_by_topic(responses).items()]
        )

    @_handler
    def Fetch(self, request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
        partitions = request_parsing.fetch_partitions(request, self._partition_max_bytes)
        max_bytes = min(request.max_bytes or self._fetch_max_bytes, self._fetch_max_bytes)
        results = self.broker.replica_manager.fetch(partitions, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes, max_bytes=max_bytes)
        responses = [(partition.topic, self._fetch_partition_response(partition.partition, result)) for partition, result in zip(partitions, results)]
        return broker_pb2.FetchResponse(
            topics=[broker_pb2.FetchTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    @staticmethod
    def _fetch_partition_response(partition: int, result: FetchPartitionResult) -> broker_pb2.FetchPartitionResponse:
        if result.error is None:
            return broker_pb2.FetchPartitionResponse(
                partition=partition,
                high_watermark=result.high_watermark,
                last_stable_offset=result.high_watermark,
                log_start_offset=result.log_start_offset,
                records=result.records,
            )
        code, message = error_code_and_message(result.error)
        return broker_pb2.FetchPartitionResponse(
            partition=partition,
            error_code=code,
            error_message=message,
            high_watermark=result.high_watermark,
            last_stable_offset=result.high_watermark,
            log_start_offset=result.log_start_offset,
        )

    @_handler
    def ListOffsets(self, request: broker_pb2.ListOffsetsRequest) -> broker_pb2.ListOffsetsResponse:
        responses = []
        for topic, partition, timestamp in request_parsing.list_offsets_partitions(request):
            try:
                found = self.broker.replica_manager.list_offset(topic, partition, timestamp)
                response = broker_pb2.ListOffsetsPartitionResponse(partition=partition, timestamp=found.timestamp, offset=found.offset, leader_epoch=found.leader_epoch)
            except Exception as error:
                code, message = error_code_and_message(error)
                response = broker_pb2.ListOffsetsPartitionResponse(partition=partition, error_code=code, error_message=message, timestamp=-1, offset=-1, leader_epoch=-1)
            responses.append((topic, response))
        return broker_pb2.ListOffsetsResponse(
            topics=[broker_pb2.ListOffsetsTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    # ------------------------------------------------------------------ producer ids and committed offsets

    @_handler
    def InitProducerId(self, request: broker_pb2.InitProducerIdRequest) -> broker_pb2.InitProducerIdResponse:
        try:
            allocated = self.broker.producer_ids.init_producer_id(
                transactional_id=request.transactional_id, producer_id=request.producer_id, producer_epoch=request.producer_epoch
            )
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.InitProducerIdResponse(error_code=code, error_message=message, producer_id=-1, producer_epoch=-1)
        return broker_pb2.InitProducerIdResponse(producer_id=allocated.producer_id, producer_epoch=allocated.epoch)

    @_handler
    def OffsetCommit(self, request: broker_pb2.OffsetCommitRequest) -> broker_pb2.OffsetCommitResponse:
        request_parsing.require_nonempty(request.topics, "topic")
        entries = [
            OffsetCommitEntry(topic.topic, partition.partition, partition.committed_offset, partition.committed_leader_epoch, partition.metadata)
            for topic in request.topics
            for partition in topic.partitions
        ]
        request_parsing.require_unique(((entry.topic, entry.partition) for entry in entries), "topic-partition")
        try:
            outcomes = self.broker.offset_store.commit(request.group_id, request.member_id, entries)
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.OffsetCommitResponse(error_code=code, error_message=message)
        responses = []
        for entry, outcome in zip(entries, outcomes):
            code, message = (NO_ERROR, "") if outcome is None else error_code_and_message(outcome)
            responses.append((entry.topic, broker_pb2.OffsetCommitPartitionResponse(partition=entry.partition, error_code=code, error_message=message)))
        return broker_pb2.OffsetCommitResponse(
            topics=[broker_pb2.OffsetCommitTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    @_handler
    def OffsetFetch(self, request: broker_pb2.OffsetFetchRequest) -> broker_pb2.OffsetFetchResponse:
        wanted = [(topic.topic, partition) for topic in request.topics for partition in topic.partitions] if request.topics else None
        if wanted is not None:
            request_parsing.require_unique(wanted, "topic-partition")
        try:
            committed = self.broker.offset_store.fetch(request.group_id, wanted)
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.OffsetFetchResponse(error_code=code, error_message=message)
        responses = []
        for topic, partition, value in committed:
            if value is None:
                response = broker_pb2.OffsetFetchPartitionResponse(partition=partition, committed_offset=-1, committed_leader_epoch=-1)
            else:
                response = broker_pb2.OffsetFetchPartitionResponse(
                    partition=partition, committed_offset=value.offset, committed_leader_epoch=value.leader_epoch, metadata=value.metadata
                )
            responses.append((topic, response))
        return broker_pb2.OffsetFetchResponse(
            topics=[broker_pb2.OffsetFetchTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

