"""The gRPC ``weir.v1.Broker`` service: parse the request, call the broker's logic, build the response.

Servicer methods hold no logic of their own. Per-partition outcomes come back as values or
exceptions and are turned into Kafka error codes by ``server.errors``; a malformed request
is refused as a whole with INVALID_ARGUMENT; an unexpected exception is logged and answered
with INTERNAL, and the broker keeps serving.

Every call is authenticated first (``security.authenticator``), before its message is read,
by the server's interceptor (``server.admission``), which hands the resulting
:class:`CallContext` to the handler; it maps the plain topic and group names of the request into the caller's
tenant and back, and authorizes each topic and group with the tenant's ACLs. A topic the
caller may not use is answered with TOPIC_AUTHORIZATION_FAILED whether or not it exists.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import grpc

from broker_nodes.cluster_state import BrokerEndpoint, ManagedTopic
from broker_nodes.coordinator.groups import messages as group_messages
from broker_nodes.coordinator.groups.group import GroupState
from broker_nodes.coordinator.groups.subscriptions import TenantSubscriptions
from broker_nodes.coordinator.lookup import find_coordinator
from broker_nodes.coordinator.offset_store import InvalidGroupIdError, OffsetCommitEntry
from broker_nodes.replica_manager import LEADER_EPOCH, FetchPartitionRequest, FetchPartitionResult
from broker_nodes.requests import configs as config_requests
from broker_nodes.requests import topics as topic_requests
from broker_nodes.security.access import CallContext, CallerKind, client_host_of
from broker_nodes.security.authenticator import AuthenticationError, CredentialsUnavailableError
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.errors import ClusterAuthorizationError, GroupAuthorizationError, TopicAuthorizationError
from broker_nodes.security.quotas import Direction
from broker_nodes.server import request_parsing
from broker_nodes.server.admission import current_call
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import BrokerNotReadyError, InvalidRequestError, error_code_and_message, grpc_status
from broker_nodes.topic_registry import TopicMetadata, UnknownTopicOrPartitionError
from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

Request = TypeVar("Request")
Response = TypeVar("Response")
Item = TypeVar("Item")

NO_ERROR = 0


def _handler(
    method: Callable[[BrokerServicer, Request, CallContext], Response],
) -> Callable[[BrokerServicer, Request, grpc.ServicerContext], Response]:
    """Wrap a servicer method: refuse calls until the broker is ready, authenticate, map escaping errors to a status."""

    @functools.wraps(method)
    def handle(self: BrokerServicer, request: Request, context: grpc.ServicerContext) -> Response:
        try:
            if not self.broker.ready:
                raise BrokerNotReadyError("the broker is starting (recovering its logs) or shutting down")
            return method(self, request, self._caller(context))
        except (InvalidRequestError, BrokerNotReadyError, AuthenticationError, CredentialsUnavailableError) as error:
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

    def __init__(self, broker: Broker, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.broker = broker
        # Delays the responses of tenants over their byte-rate quota (injected so tests need not wait).
        self._sleep = sleep
        config = broker.config
        self._fetch_max_bytes = int(config["fetch.max.bytes"])  # type: ignore[call-overload]
        self._partition_max_bytes = int(config["max.partition.fetch.bytes"])  # type: ignore[call-overload]
        self._node = broker_pb2.BrokerNode(node_id=config.node_id, host=config.host_for_clients, port=0, rack=config.rack)

    def _caller(self, context: grpc.ServicerContext) -> CallContext:
        """Who makes this call: the context the interceptor authenticated, with the client's address
        (which interceptors cannot see); authenticated here when served without the interceptor."""
        call = current_call()
        if call is None:
            return self.broker.authenticator.authenticate(context.invocation_metadata(), context.peer())
        return dataclasses.replace(call, client_host=client_host_of(context.peer()))

    def set_port(self, port: int) -> None:
        """The port clients reach this broker on (known once the server is bound)."""
        self._node.port = port

    # ------------------------------------------------------------------ metadata and topic admin

    @_handler
    def Metadata(self, request: broker_pb2.MetadataRequest, call: CallContext) -> broker_pb2.MetadataResponse:
        names = list(dict.fromkeys(request.topics))  # repeated names are answered once, as Kafka does
        snapshot = self.broker.cluster_state.snapshot
        managed_topics = snapshot.topics if snapshot is not None else {}
        topics = []
        if not names:
            for topic in self.broker.topic_admin.describe_topics([], allow_auto_create=False):
                assert isinstance(topic, TopicMetadata)
                if call.owns(topic.name) and call.may(Operation.DESCRIBE, ResourceType.TOPIC, call.plain(topic.name)):
                    topics.append(self._topic_metadata(topic, managed_topics.get(topic.name), call))
        else:
            # Auto-creation is the control plane's business once topics are managed or tenant-owned.
            auto_create = request.allow_auto_topic_creation and not self.broker.managed and not call.has_tenant
            for name in names:
                if not call.may(Operation.DESCRIBE, ResourceType.TOPIC, name):
                    code, message = error_code_and_message(TopicAuthorizationError(name, "describe"))
                    topics.append(broker_pb2.TopicMetadata(error_code=code, error_message=message, name=name))
                    continue
                result = self.broker.topic_admin.describe_topics([call.qualify(name)], allow_auto_create=auto_create)[0]
                if isinstance(result, TopicMetadata) and call.owns(result.name):
                    topics.append(self._topic_metadata(result, managed_topics.get(result.name), call))
                else:
                    error = result if isinstance(result, Exception) else UnknownTopicOrPartitionError(name)
                    code, message = error_code_and_message(error)
                    topics.append(broker_pb2.TopicMetadata(error_code=code, error_message=message.replace(call.qualify(name), name), name=name))
        node_id = self.broker.config.node_id
        if snapshot is None:
            return broker_pb2.MetadataResponse(brokers=[self._node], cluster_id=self.broker.cluster_id, controller_id=node_id, topics=topics)
        brokers = [broker_pb2.BrokerNode(node_id=node.node_id, host=node.host, port=node.port, rack=node.rack) for node in snapshot.brokers]
        if not any(node.node_id == node_id for node in snapshot.brokers):
            brokers.append(self._node)
        return broker_pb2.MetadataResponse(brokers=brokers, cluster_id=snapshot.cluster_id or self.broker.cluster_id, controller_id=node_id, topics=topics)

    def _topic_metadata(self, topic: TopicMetadata, managed: ManagedTopic | None, call: CallContext) -> broker_pb2.TopicMetadata:
        if managed is not None:
            partitions = [
                broker_pb2.PartitionMetadata(
                    partition=assignment.partition,
                    leader_id=assignment.leader_id,
                    leader_epoch=assignment.leader_epoch,
                    replicas=assignment.replicas,
                    # As leader, the ISR this broker keeps is newer than the map's.
                    isr=self.broker.replication.isr(topic.name, assignment.partition) or assignment.isr,
                )
                for assignment in managed.partitions
            ]
        else:
            node_id = self.broker.config.node_id
            partitions = [
                broker_pb2.PartitionMetadata(partition=partition, leader_id=node_id, leader_epoch=LEADER_EPOCH, replicas=[node_id], isr=[node_id])
                for partition in range(topic.partitions)
            ]
        return broker_pb2.TopicMetadata(name=call.plain(topic.name), is_internal=topic.internal, partitions=partitions, topic_id=topic.topic_id)

    @_handler
    def CreateTopics(self, request: broker_pb2.CreateTopicsRequest, call: CallContext) -> broker_pb2.CreateTopicsResponse:
        return topic_requests.create_topics(self.broker, call, request)

    @_handler
    def DeleteTopics(self, request: broker_pb2.DeleteTopicsRequest, call: CallContext) -> broker_pb2.DeleteTopicsResponse:
        return topic_requests.delete_topics(self.broker, call, request.topics, request.timeout_ms)

    @_handler
    def CreatePartitions(self, request: broker_pb2.CreatePartitionsRequest, call: CallContext) -> broker_pb2.CreatePartitionsResponse:
        return topic_requests.create_partitions(self.broker, call, request)

    # ------------------------------------------------------------------ configs

    @_handler
    def DescribeConfigs(self, request: broker_pb2.DescribeConfigsRequest, call: CallContext) -> broker_pb2.DescribeConfigsResponse:
        return config_requests.describe_configs(self.broker, call, request)

    @_handler
    def AlterConfigs(self, request: broker_pb2.AlterConfigsRequest, call: CallContext) -> broker_pb2.AlterConfigsResponse:
        return config_requests.alter_configs(self.broker, call, request)

    # ------------------------------------------------------------------ produce and fetch

    def _throttle(self, call: CallContext, direction: Direction, size_bytes: int) -> int:
        """Charge ``size_bytes`` to the caller's tenant; delay this response when it is over its quota.

        The delay holds no lock (only this request's thread waits); it is bounded by the
        quota manager's maximum throttle time.
        """
        security = self.broker.security.snapshot
        if security is None or not call.has_tenant or size_bytes <= 0:
            return 0
        quota = security.quota_of(call.tenant_id)
        rate = quota.produce_bytes_per_second if direction is Direction.PRODUCE else quota.consume_bytes_per_second
        throttle_ms = self.broker.quotas.record(call.tenant_id, direction, size_bytes, rate)
        if throttle_ms > 0:
            self._sleep(throttle_ms / 1000.0)
        return throttle_ms

    @_handler
    def Produce(self, request: broker_pb2.ProduceRequest, call: CallContext) -> broker_pb2.ProduceResponse:
        requested = request_parsing.produce_entries(request)
        authorized = [(topic, partition, records) for topic, partition, records in requested if call.may(Operation.WRITE, ResourceType.TOPIC, topic)]
        usage = self.broker.metering.produce_tally(call)
        appended = self.broker.replica_manager.append_records(
            request.acks,
            [(call.qualify(topic), partition, records) for topic, partition, records in authorized],
            transactional_id=request.transactional_id,
            timeout_ms=request.timeout_ms,
            trusted=call.kind is CallerKind.INTERNAL,
            on_append=usage.appended if usage is not None else None,
        )
        outcomes_by_partition = {(topic, partition): outcome for (topic, partition, _), outcome in zip(authorized, appended)}
        entries = requested
        outcomes = [
            outcomes_by_partition[(topic, partition)] if (topic, partition) in outcomes_by_partition else TopicAuthorizationError(topic, "write to")
            for topic, partition, _ in requested
        ]
        throttle_ms = self._throttle(call, Direction.PRODUCE, sum(len(records) for _, _, records in authorized))
        if usage is not None:
            usage.finish(throttle_ms)
        responses = []
        for (topic, partition, _), outcome in zip(entries, outcomes):
            if isinstance(outcome, Exception):
                code, message = error_code_and_message(outcome)
                message = message.replace(call.qualify(topic), topic)
                response = broker_pb2.ProducePartitionResponse(
                    partition=partition, error_code=code, error_message=message, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1
                )
            else:
                response = broker_pb2.ProducePartitionResponse(
                    partition=partition,
                    base_offset=outcome.first_offset,
                    log_append_time_ms=outcome.log_append_time_ms,
                    log_start_offset=outcome.log_start_offset,
                )
            responses.append((topic, response))
        return broker_pb2.ProduceResponse(
            topics=[broker_pb2.ProduceTopicResponse(topic=topic, partitions=partitions) for topic, partitions in _group_by_topic(responses).items()],
            throttle_time_ms=throttle_ms,
        )

    @_handler
    def Fetch(self, request: broker_pb2.FetchRequest, call: CallContext) -> broker_pb2.FetchResponse:
        partitions = request_parsing.fetch_partitions(request, self._partition_max_bytes)
        max_bytes = min(request.max_bytes or self._fetch_max_bytes, self._fetch_max_bytes)
        authorized = [partition for partition in partitions if call.may(Operation.READ, ResourceType.TOPIC, partition.topic)]
        qualified = [
            FetchPartitionRequest(call.qualify(item.topic), item.partition, item.fetch_offset, item.max_bytes, item.current_leader_epoch) for item in authorized
        ]
        if len(authorized) < len(partitions):
            # A denied partition is answered at once, as an error answers a fetch at once.
            results = self.broker.replica_manager.fetch(qualified, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes)
        else:
            results = self.broker.replica_manager.fetch(qualified, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes, max_bytes=max_bytes)
        results_by_partition = {(item.topic, item.partition): result for item, result in zip(authorized, results)}
        responses = []
        for item in partitions:
            result = results_by_partition.get((item.topic, item.partition))
            if result is None:
                result = FetchPartitionResult(b"", -1, -1, TopicAuthorizationError(item.topic, "read from"))
            responses.append((item.topic, self._fetch_partition_response(item.partition, result, call.qualify(item.topic), item.topic)))
        throttle_ms = self._throttle(call, Direction.FETCH, sum(len(result.records) for result in results))
        self.broker.metering.record_fetch(call, qualified, results, throttle_ms)
        return broker_pb2.FetchResponse(
            topics=[broker_pb2.FetchTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()],
            throttle_time_ms=throttle_ms,
        )

    @staticmethod
    def _fetch_partition_response(partition: int, result: FetchPartitionResult, qualified: str = "", plain: str = "") -> broker_pb2.FetchPartitionResponse:
        if result.error is None:
            return broker_pb2.FetchPartitionResponse(
                partition=partition,
                high_watermark=result.high_watermark,
                last_stable_offset=result.high_watermark,
                log_start_offset=result.log_start_offset,
                records=result.records,
            )
        code, message = error_code_and_message(result.error)
        if qualified != plain:
            message = message.replace(qualified, plain)
        return broker_pb2.FetchPartitionResponse(
            partition=partition,
            error_code=code,
            error_message=message,
            high_watermark=result.high_watermark,
            last_stable_offset=result.high_watermark,
            log_start_offset=result.log_start_offset,
        )

    @_handler
    def ListOffsets(self, request: broker_pb2.ListOffsetsRequest, call: CallContext) -> broker_pb2.ListOffsetsResponse:
        responses = []
        for topic, partition, timestamp in request_parsing.list_offsets_partitions(request):
            try:
                if not call.may(Operation.DESCRIBE, ResourceType.TOPIC, topic):
                    raise TopicAuthorizationError(topic, "describe")
                try:
                    found = self.broker.replica_manager.list_offset(call.qualify(topic), partition, timestamp)
                except UnknownTopicOrPartitionError:
                    raise UnknownTopicOrPartitionError(topic, partition) from None
                response = broker_pb2.ListOffsetsPartitionResponse(
                    partition=partition, timestamp=found.timestamp, offset=found.offset, leader_epoch=found.leader_epoch
                )
            except Exception as error:
                code, message = error_code_and_message(error)
                response = broker_pb2.ListOffsetsPartitionResponse(
                    partition=partition, error_code=code, error_message=message, timestamp=-1, offset=-1, leader_epoch=-1
                )
            responses.append((topic, response))
        return broker_pb2.ListOffsetsResponse(
            topics=[broker_pb2.ListOffsetsTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    # ------------------------------------------------------------------ producer ids and committed offsets

    @_handler
    def InitProducerId(self, request: broker_pb2.InitProducerIdRequest, call: CallContext) -> broker_pb2.InitProducerIdResponse:
        try:
            # Kafka: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic.
            if not (call.may(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME) or call.may_on_any(Operation.WRITE, ResourceType.TOPIC)):
                raise ClusterAuthorizationError("initialise an idempotent producer")
            allocated = self.broker.producer_ids.init_producer_id(
                transactional_id=request.transactional_id, producer_id=request.producer_id, producer_epoch=request.producer_epoch
            )
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.InitProducerIdResponse(error_code=code, error_message=message, producer_id=-1, producer_epoch=-1)
        return broker_pb2.InitProducerIdResponse(producer_id=allocated.producer_id, producer_epoch=allocated.epoch)

    @_handler
    def OffsetCommit(self, request: broker_pb2.OffsetCommitRequest, call: CallContext) -> broker_pb2.OffsetCommitResponse:
        request_parsing.require_nonempty(request.topics, "topic")
        entries = [
            OffsetCommitEntry(topic.topic, partition.partition, partition.committed_offset, partition.committed_leader_epoch, partition.metadata)
            for topic in request.topics
            for partition in topic.partitions
        ]
        request_parsing.require_unique(((entry.topic, entry.partition) for entry in entries), "topic-partition")
        if request.group_id and not call.may(Operation.READ, ResourceType.GROUP, request.group_id):
            code, message = error_code_and_message(GroupAuthorizationError(request.group_id, "commit offsets of"))
            return broker_pb2.OffsetCommitResponse(error_code=code, error_message=message)
        authorized = [entry for entry in entries if call.may(Operation.READ, ResourceType.TOPIC, entry.topic)]
        qualified = [OffsetCommitEntry(call.qualify(entry.topic), entry.partition, entry.offset, entry.leader_epoch, entry.metadata) for entry in authorized]
        try:
            committed = self.broker.offset_store.commit(
                call.qualify(request.group_id) if request.group_id else "", request.member_id, qualified, member_epoch=request.generation_id
            )
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.OffsetCommitResponse(error_code=code, error_message=message)
        committed_by_partition = {(entry.topic, entry.partition): outcome for entry, outcome in zip(authorized, committed)}
        outcomes = [
            committed_by_partition[(entry.topic, entry.partition)]
            if (entry.topic, entry.partition) in committed_by_partition
            else TopicAuthorizationError(entry.topic, "commit offsets of")
            for entry in entries
        ]
        responses = []
        for entry, outcome in zip(entries, outcomes):
            code, message = (NO_ERROR, "") if outcome is None else error_code_and_message(outcome)
            message = message.replace(call.qualify(entry.topic), entry.topic)
            responses.append((entry.topic, broker_pb2.OffsetCommitPartitionResponse(partition=entry.partition, error_code=code, error_message=message)))
        return broker_pb2.OffsetCommitResponse(
            topics=[broker_pb2.OffsetCommitTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    @_handler
    def OffsetFetch(self, request: broker_pb2.OffsetFetchRequest, call: CallContext) -> broker_pb2.OffsetFetchResponse:
        wanted = [(topic.topic, partition) for topic in request.topics for partition in topic.partitions] if request.topics else None
        if wanted is not None:
            request_parsing.require_unique(wanted, "topic-partition")
        if request.group_id and not call.may(Operation.READ, ResourceType.GROUP, request.group_id):
            code, message = error_code_and_message(GroupAuthorizationError(request.group_id, "fetch offsets of"))
            return broker_pb2.OffsetFetchResponse(error_code=code, error_message=message)
        try:
            committed = self.broker.offset_store.fetch(
                call.qualify(request.group_id) if request.group_id else "",
                None if wanted is None else [(call.qualify(topic), partition) for topic, partition in wanted],
            )
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.OffsetFetchResponse(error_code=code, error_message=message)
        responses = []
        for qualified_topic, partition, value in committed:
            if not call.owns(qualified_topic):
                continue
            topic = call.plain(qualified_topic)
            if not call.may(Operation.READ, ResourceType.TOPIC, topic):
                if wanted is None:
                    continue  # listing every commit of the group shows only the topics the caller may read
                code, message = error_code_and_message(TopicAuthorizationError(topic, "fetch offsets of"))
                response = broker_pb2.OffsetFetchPartitionResponse(
                    partition=partition, committed_offset=-1, committed_leader_epoch=-1, error_code=code, error_message=message
                )
            elif value is None:
                response = broker_pb2.OffsetFetchPartitionResponse(partition=partition, committed_offset=-1, committed_leader_epoch=-1)
            else:
                response = broker_pb2.OffsetFetchPartitionResponse(
                    partition=partition, committed_offset=value.offset, committed_leader_epoch=value.leader_epoch, metadata=value.metadata
                )
            responses.append((topic, response))
        return broker_pb2.OffsetFetchResponse(
            topics=[broker_pb2.OffsetFetchTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    @_handler
    def FindCoordinator(self, request: broker_pb2.FindCoordinatorRequest, call: CallContext) -> broker_pb2.FindCoordinatorResponse:
        """Each group's coordinator, in request order; Kafka asks for DESCRIBE on the group."""
        request_parsing.require_nonempty(request.group_ids, "group id")
        snapshot = self.broker.cluster_state.snapshot
        this_broker = BrokerEndpoint(self._node.node_id, self._node.host, self._node.port, self._node.rack)
        coordinators = []
        for group_id in request.group_ids:
            try:
                if not group_id:
                    raise InvalidRequestError("a group id must not be empty")
                if not call.may(Operation.DESCRIBE, ResourceType.GROUP, group_id):
                    raise GroupAuthorizationError(group_id, "describe")
                node = find_coordinator(snapshot, call.qualify(group_id), this_broker)
                coordinators.append(broker_pb2.Coordinator(group_id=group_id, node_id=node.node_id, host=node.host, port=node.port))
            except Exception as error:
                code, message = error_code_and_message(error)
                # Kafka's Node.noNode(): id -1, no host, port -1.
                coordinators.append(broker_pb2.Coordinator(group_id=group_id, node_id=-1, host="", port=-1, error_code=code, error_message=message))
        return broker_pb2.FindCoordinatorResponse(coordinators=coordinators)

    # ------------------------------------------------------------------ consumer groups (KIP-848)

    @staticmethod
    def _check_group(group_id: str, call: CallContext, operation: Operation, verb: str) -> None:
        if not group_id:
            raise InvalidGroupIdError(group_id)
        if not call.may(operation, ResourceType.GROUP, group_id):
            raise GroupAuthorizationError(group_id, verb)

    @_handler
    def ConsumerGroupHeartbeat(self, request: broker_pb2.ConsumerGroupHeartbeatRequest, call: CallContext) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        """Join, heartbeat or leave (READ on the group; READ on each subscribed topic)."""
        try:
            self._check_group(request.group_id, call, Operation.READ, "join")
            answer = self.broker.group_coordinator.heartbeat(
                call.qualify(request.group_id), group_messages.heartbeat_request(request, call), TenantSubscriptions(self.broker.registry, call)
            )
        except Exception as error:
            code, message = error_code_and_message(error)
            return broker_pb2.ConsumerGroupHeartbeatResponse(
                error_code=code, error_message=message, member_id=request.member_id, member_epoch=request.member_epoch
            )
        return group_messages.heartbeat_response(answer, call)

    @_handler
    def ConsumerGroupDescribe(self, request: broker_pb2.ConsumerGroupDescribeRequest, call: CallContext) -> broker_pb2.ConsumerGroupDescribeResponse:
        """Each group's state, members and assignments, in request order (DESCRIBE on the group)."""
        request_parsing.require_nonempty(request.group_ids, "group id")
        groups = []
        for group_id in request.group_ids:
            try:
                self._check_group(group_id, call, Operation.DESCRIBE, "describe")
                groups.append(group_messages.group_description(self.broker.group_coordinator.describe(call.qualify(group_id)), call))
            except Exception as error:
                code, message = error_code_and_message(error)
                state = GroupState.DEAD.value if code == ErrorCode.GROUP_ID_NOT_FOUND else ""
                groups.append(broker_pb2.GroupDescription(group_id=group_id, error_code=code, error_message=message, state=state))
        return broker_pb2.ConsumerGroupDescribeResponse(groups=groups)

    @_handler
    def ListGroups(self, request: broker_pb2.ListGroupsRequest, call: CallContext) -> broker_pb2.ListGroupsResponse:
        """The groups this broker coordinates that the caller may describe, optionally only those in the given states."""
        known = {state.value.lower(): state for state in GroupState}
        wanted = set()
        for name in request.states_filter:
            if name.lower() not in known:
                raise InvalidRequestError(f"group state {name!r} does not exist: use one of {', '.join(state.value for state in GroupState)}")
            wanted.add(known[name.lower()])
        groups = [
            group_messages.listed_group(group, call)
            for group in self.broker.group_coordinator.list_groups()
            if call.owns(group.group_id)
            and (not wanted or group.state in wanted)
            and call.may(Operation.DESCRIBE, ResourceType.GROUP, call.plain(group.group_id))
        ]
        return broker_pb2.ListGroupsResponse(groups=groups)

    @_handler
    def DeleteGroups(self, request: broker_pb2.DeleteGroupsRequest, call: CallContext) -> broker_pb2.DeleteGroupsResponse:
        """Delete groups without members, with their committed offsets (DELETE on the group)."""
        request_parsing.require_nonempty(request.group_ids, "group id")
        request_parsing.require_unique(request.group_ids, "group id")
        results = []
        for group_id in request.group_ids:
            try:
                self._check_group(group_id, call, Operation.DELETE, "delete")
                self.broker.group_coordinator.delete_group(call.qualify(group_id))
                results.append(broker_pb2.DeletedGroup(group_id=group_id))
            except Exception as error:
                code, message = error_code_and_message(error)
                results.append(broker_pb2.DeletedGroup(group_id=group_id, error_code=code, error_message=message))
        return broker_pb2.DeleteGroupsResponse(groups=results)
