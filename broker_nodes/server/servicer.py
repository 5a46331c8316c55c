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

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot
from broker_nodes.coordinator.groups import messages as group_messages
from broker_nodes.coordinator.offset_store import OffsetCommitEntry
from broker_nodes.coordinator.transactions.state import TransactionState
from broker_nodes.metrics import record_bytes
from broker_nodes.replica_manager import READ_COMMITTED, READ_UNCOMMITTED
from broker_nodes.replication import stage_trace
from broker_nodes.requests import acls as acl_requests
from broker_nodes.requests import cluster as cluster_requests
from broker_nodes.requests import configs as config_requests
from broker_nodes.requests import coordinator_lookup as coordinator_lookup_requests
from broker_nodes.requests import delete_records as delete_records_requests
from broker_nodes.requests import elections as election_requests
from broker_nodes.requests import fetch as fetch_requests
from broker_nodes.requests import group_offsets as group_offset_requests
from broker_nodes.requests import groups as group_requests
from broker_nodes.requests import list_offsets as list_offsets_requests
from broker_nodes.requests import metadata as metadata_requests
from broker_nodes.requests import produce as produce_requests
from broker_nodes.requests import producer_ids as producer_id_requests
from broker_nodes.requests import scram_credentials as scram_requests
from broker_nodes.requests import topics as topic_requests
from broker_nodes.requests import transaction_admin as transaction_admin_requests
from broker_nodes.requests import transactions as transaction_requests
from broker_nodes.requests.coordinator_lookup import CoordinatorOutcome
from broker_nodes.requests.delete_records import DeleteRecordsPartition
from broker_nodes.requests.departure import Departure
from broker_nodes.requests.fetch import FetchAbandonedError
from broker_nodes.requests.list_offsets import ListOffsetsPartition
from broker_nodes.requests.produce import ProducePartition
from broker_nodes.security.access import CallContext, client_host_of
from broker_nodes.security.authenticator import AuthenticationError, CredentialsUnavailableError
from broker_nodes.server import request_parsing
from broker_nodes.server.admission import current_call
from broker_nodes.server.broker import Broker, max_fetch_streams
from broker_nodes.server.errors import BrokerNotReadyError, InvalidRequestError, grpc_status
from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc, controller_pb2
from log_formats import consumer_fetch_trace
from weir.fetch_streams import FETCH_STREAM_REFUSED_TRAILER
from weir.produce_streams import STREAM_REFUSED_TRAILER

logger = logging.getLogger(__name__)

Request = TypeVar("Request")
Response = TypeVar("Response")
Item = TypeVar("Item")
Converted = TypeVar("Converted", bound=Message)
TopicAnswer = TypeVar("TopicAnswer")

NO_ERROR = 0
# Errors that end a call with their own status (see grpc_status); anything else is INTERNAL and logged.
_EXPECTED_ERRORS = (InvalidRequestError, BrokerNotReadyError, AuthenticationError, CredentialsUnavailableError)
_NOT_RESOLVED = object()  # no security snapshot is: a stream resolves its caller again before its first request
STREAM_RESOLVE_SECONDS = 30.0  # a stream's caller is resolved again at least this often (tenant tokens expire)


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
        except _EXPECTED_ERRORS as error:
            context.abort(grpc_status(error), str(error))
        except Exception as error:
            logger.exception("%s failed unexpectedly", method.__name__)
            context.abort(grpc_status(error), f"unexpected server error: {type(error).__name__}: {error}")
        raise AssertionError("context.abort always raises")

    return handle


def _epoch_end_offset(diverging: tuple[int, int] | None) -> broker_pb2.EpochEndOffset | None:
    """A Fetch answer's diverging epoch (KIP-320); None leaves the field unset (the logs agree)."""
    if diverging is None:
        return None
    return broker_pb2.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])


def _partition_results(outcomes: Mapping[str, Mapping[int, tuple[int, str]]]) -> list[broker_pb2.TopicPartitionResults]:
    """Per-partition (code, message) outcomes keyed by topic, as the transaction RPCs answer them."""
    return [
        broker_pb2.TopicPartitionResults(
            topic=topic,
            partitions=[
                broker_pb2.PartitionResult(partition=partition, error_code=code, error_message=message) for partition, (code, message) in results.items()
            ],
        )
        for topic, results in outcomes.items()
    ]


def _group_by_topic(items: Iterable[tuple[str, Item]]) -> dict[str, list[Item]]:
    grouped: dict[str, list[Item]] = {}
    for topic, item in items:
        grouped.setdefault(topic, []).append(item)
    return grouped


def _topic_in_place(topics: dict[str, TopicAnswer], repeated: Any, name: str) -> TopicAnswer:
    """The entry of topic ``name`` in an answer built in place (``repeated``: its ``topics`` field), added at its first partition.

    Built in place because upb serializes and parses again every message handed to a constructor
    (a Fetch answer's records were copied twice more; a one-partition Produce answer took twice as long)."""
    topic = topics.get(name)
    if topic is None:
        topic = topics[name] = repeated.add(topic=name)
    return topic


class BrokerServicer(broker_pb2_grpc.BrokerServicer):
    """Thin adapter from ``broker.proto`` messages to :class:`Broker`. Thread-safe (stateless)."""

    def __init__(self, broker: Broker, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.broker = broker
        # Delays the responses of tenants over their byte-rate quota (injected so tests need not wait).
        self._sleep = sleep
        config = broker.config
        self._partition_max_bytes = config.integer("max.partition.fetch.bytes")
        self._node = broker_pb2.BrokerNode(node_id=config.node_id, host=config.host_for_clients, port=0, rack=config.rack)
        # A ProduceStream holds a request thread for its whole life: at most a quarter of num.io.threads
        # do, and requests waiting for room in the request budget at most half (server.app), so that a
        # quarter stays free for every other call even under a flood (a refused client uses Produce).
        self._produce_streams = threading.BoundedSemaphore(max(1, config.integer("num.io.threads") // 4))
        # A FetchStream holds a thread too, one the pool has beside num.io.threads (server.broker.request_thread_count).
        # fetch.streams.max 0: every stream is refused.
        self._fetch_streams = threading.BoundedSemaphore(max_fetch_streams(config))

    def _caller(self, context: grpc.ServicerContext, *, fresh: bool = False) -> CallContext:
        """Who makes this call: the context the interceptor authenticated, with the client's address
        (which interceptors cannot see); authenticated here when served without the interceptor, or
        ``fresh`` (a stream's caller against the current security snapshot)."""
        call = None if fresh else current_call()
        if call is None:
            return self.broker.authenticator.authenticate(context.invocation_metadata(), context.peer())
        client_host = client_host_of(context.peer())
        self.broker.authenticator.note_grpc_application(call, context.invocation_metadata(), client_host)
        return call.with_client_host(client_host)

    def set_port(self, port: int) -> None:
        """The port clients reach this broker on (known once the server is bound)."""
        self._node.port = port

    # ------------------------------------------------------------------ metadata and topic admin

    @_handler
    def Metadata(self, request: broker_pb2.MetadataRequest, call: CallContext) -> broker_pb2.MetadataResponse:
        result = metadata_requests.describe(self.broker, call, list(request.topics), allow_auto_topic_creation=request.allow_auto_topic_creation)
        topics = [
            broker_pb2.TopicMetadata(
                name=topic.name,
                error_code=topic.error_code,
                error_message=topic.error_message,
                is_internal=topic.is_internal,
                topic_id=topic.topic_id,
                **_topic_operations(call, topic, request.include_topic_authorized_operations),
                partitions=[
                    broker_pb2.PartitionMetadata(
                        partition=item.partition, leader_id=item.leader_id, leader_epoch=item.leader_epoch, replicas=item.replicas, isr=item.isr
                    )
                    for item in topic.partitions
                ],
            )
            for topic in result.topics
        ]
        return broker_pb2.MetadataResponse(
            brokers=self._brokers(result.snapshot), cluster_id=result.cluster_id, controller_id=result.controller_id, topics=topics
        )

    def _brokers(self, snapshot: ClusterSnapshot | None) -> list[broker_pb2.BrokerNode]:
        """The cluster map's brokers, this one always among them (alone while it has no map)."""
        if snapshot is None:
            return [self._node]
        brokers = [broker_pb2.BrokerNode(node_id=node.node_id, host=node.host, port=node.port, rack=node.rack) for node in snapshot.brokers]
        if not any(node.node_id == self._node.node_id for node in snapshot.brokers):
            brokers.append(self._node)
        return brokers

    @_handler
    def DescribeCluster(self, request: broker_pb2.DescribeClusterRequest, call: CallContext) -> broker_pb2.DescribeClusterResponse:
        """``requests.cluster.describe_cluster``, with the brokers of Metadata's answer."""
        description = cluster_requests.describe_cluster(self.broker, call, include_authorized_operations=request.include_authorized_operations)
        operations = description.authorized_operations
        return broker_pb2.DescribeClusterResponse(
            cluster_id=description.cluster_id,
            controller_id=description.controller_id,
            brokers=self._brokers(self.broker.cluster_state.snapshot),
            authorized_operations_included=operations is not None,
            authorized_operations=sorted(operation.name for operation in operations or ()),
        )

    # ------------------------------------------------------------------ ACLs and records (the Kafka listener's request logic)

    @_handler
    def DescribeUserScramCredentials(
        self, request: broker_pb2.DescribeUserScramCredentialsRequest, call: CallContext
    ) -> broker_pb2.DescribeUserScramCredentialsResponse:
        described = scram_requests.describe_scram_credentials(self.broker, call, list(request.users))
        return broker_pb2.DescribeUserScramCredentialsResponse(
            error_code=described.error_code,
            error_message=described.error_message,
            results=[
                broker_pb2.UserScramCredentialsResult(
                    user=user.user,
                    error_code=user.error_code,
                    error_message=user.error_message,
                    credential_infos=[broker_pb2.ScramCredentialInfo(mechanism=mechanism, iterations=iterations) for mechanism, iterations in user.credentials],
                )
                for user in described.users
            ],
        )

    @_handler
    def AlterUserScramCredentials(
        self, request: broker_pb2.AlterUserScramCredentialsRequest, call: CallContext
    ) -> broker_pb2.AlterUserScramCredentialsResponse:
        return broker_pb2.AlterUserScramCredentialsResponse(results=scram_requests.alter_scram_credentials(self.broker, call, request))

    @_handler
    def ElectLeaders(self, request: broker_pb2.ElectLeadersRequest, call: CallContext) -> broker_pb2.ElectLeadersResponse:
        return election_requests.elect_leaders(self.broker, call, request)

    @_handler
    def CreateAcls(self, request: broker_pb2.CreateAclsRequest, call: CallContext) -> broker_pb2.ClientCreateAclsResponse:
        creations = [_converted(binding, controller_pb2.ForwardedAclBinding) for binding in request.creations]
        results = acl_requests.create_acls(self.broker, call, creations)
        return broker_pb2.ClientCreateAclsResponse(results=[_converted(result, broker_pb2.ClientAclCreationResult) for result in results])

    @_handler
    def DescribeAcls(self, request: broker_pb2.DescribeAclsRequest, call: CallContext) -> broker_pb2.ClientDescribeAclsResponse:
        response = acl_requests.describe_acls(self.broker, call, _converted(request.filter, controller_pb2.ForwardedAclFilter))
        return _converted(response, broker_pb2.ClientDescribeAclsResponse)

    @_handler
    def DeleteAcls(self, request: broker_pb2.DeleteAclsRequest, call: CallContext) -> broker_pb2.ClientDeleteAclsResponse:
        filters = [_converted(item, controller_pb2.ForwardedAclFilter) for item in request.filters]
        results = acl_requests.delete_acls(self.broker, call, filters)
        return broker_pb2.ClientDeleteAclsResponse(results=[_converted(result, broker_pb2.ClientDeleteAclsFilterResult) for result in results])

    @_handler
    def DeleteRecords(self, request: broker_pb2.DeleteRecordsRequest, call: CallContext) -> broker_pb2.DeleteRecordsResponse:
        partitions = [DeleteRecordsPartition(topic.topic, item.partition, item.offset) for topic in request.topics for item in topic.partitions]
        outcomes = delete_records_requests.delete_records(self.broker, call, partitions, timeout_ms=request.timeout_ms)
        return broker_pb2.DeleteRecordsResponse(
            results=[
                broker_pb2.DeleteRecordsResult(
                    topic=outcome.topic,
                    partition=outcome.partition,
                    error_code=outcome.error_code,
                    error_message=outcome.error_message,
                    low_watermark=outcome.low_watermark,
                )
                for outcome in outcomes
            ]
        )

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
        response = config_requests.describe_configs(self.broker, call, request)
        if request.include_synonyms:
            for resource in response.resources:
                for entry in resource.configs:
                    entry.synonyms.extend(config_requests.config_synonym_messages(self.broker, resource.type, entry))
        return response

    @_handler
    def AlterConfigs(self, request: broker_pb2.AlterConfigsRequest, call: CallContext) -> broker_pb2.AlterConfigsResponse:
        """Incremental APPEND/SUBTRACT are resolved into SETs first (as the Kafka listener's IncrementalAlterConfigs)."""
        resolved = config_requests.resolve_list_operations(self.broker, call, request.resources)
        applicable = [resource for resource in resolved if isinstance(resource, broker_pb2.AlterConfigsResource)]
        answered = iter(
            config_requests.alter_configs(
                self.broker, call, broker_pb2.AlterConfigsRequest(resources=applicable, validate_only=request.validate_only)
            ).resources
            if applicable or not request.resources  # none: refused as a malformed request
            else []
        )
        return broker_pb2.AlterConfigsResponse(resources=[next(answered) if isinstance(item, broker_pb2.AlterConfigsResource) else item for item in resolved])

    # ------------------------------------------------------------------ produce and fetch

    def _throttle(self, throttle_ms: int) -> None:
        """Delay this response for a tenant over its quota (the requests layer computed how long).

        The delay holds no lock (only this request's thread waits); it is bounded by the
        quota manager's maximum throttle time.
        """
        if throttle_ms > 0:
            self._sleep(throttle_ms / 1000.0)

    @_handler
    def Produce(self, request: broker_pb2.ProduceRequest, call: CallContext) -> broker_pb2.ProduceResponse:
        return self._produce(request, call)

    def ProduceStream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
        """Produce requests on one stream, answered in order (see broker.proto).

        One thread reads and answers them in turn, so a producer's requests are appended in the
        order sent, and each costs the broker no hand-off between gRPC's threads as a unary call
        does (``python -m bench.rpc_floor``). The caller is authenticated for the stream and resolved again
        whenever the security snapshot changes (a revoked key ends the stream UNAUTHENTICATED).
        """
        return self._serve_stream(requests, context, self._produce_streams, STREAM_REFUSED_TRAILER, "Produce", self._produce)

    def FetchStream(self, requests: Iterator[broker_pb2.FetchRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.FetchResponse]:
        """A consumer's fetches on one stream, each answered in order as Fetch answers it (see broker.proto).

        Why: a unary Fetch costs the broker a hand-off between gRPC's threads and a call set-up
        that a message on an open stream does not (as ProduceStream). A fetch waiting in the
        purgatory when the client cancels the stream is given up at once (``requests.departure``),
        so the stream's thread and slot come back without waiting for the fetch's max_wait_ms.
        """
        departure = Departure()
        context.add_callback(departure.leave)
        return self._serve_stream(
            requests, context, self._fetch_streams, FETCH_STREAM_REFUSED_TRAILER, "Fetch", lambda request, call: self._fetch(request, call, departure)
        )

    def _serve_stream(
        self,
        requests: Iterator[Request],
        context: grpc.ServicerContext,
        slots: threading.BoundedSemaphore,
        refused_trailer: str,
        unary_method: str,
        answer: Callable[[Request, CallContext], Response],
    ) -> Iterator[Response]:
        """A stream of ``unary_method`` requests, each answered in turn by ``answer`` on this one thread, while a slot is free.

        Without a free slot the stream is refused RESOURCE_EXHAUSTED with ``refused_trailer`` (the
        SDK then uses the unary method). A request refused as a whole ends the stream with the
        status the unary call would have had; a client that cancels ends it quietly.
        """
        if not slots.acquire(blocking=False):
            context.set_trailing_metadata(((refused_trailer, "1"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the broker serves as many {unary_method} streams as it can: use {unary_method}")
        try:
            if not self.broker.ready:
                raise BrokerNotReadyError("the broker is starting (recovering its logs) or shutting down")
            call = self._caller(context)
            resolved: object = _NOT_RESOLVED  # the security snapshot ``call`` is resolved against (the interceptor's, unknown)
            monotonic = self.broker.clock.monotonic
            resolve_by = 0.0
            for request in self.broker.streams.requests(requests, context):
                snapshot = self.broker.security.snapshot
                if snapshot is not resolved or monotonic() >= resolve_by:
                    # A revoked key or changed ACLs apply to an open stream's next request, as they do to a Kafka
                    # connection's (kafka_protocol.sasl): the caller is resolved again whenever the snapshot changed,
                    # and at least every STREAM_RESOLVE_SECONDS, so that an expired tenant token stops working too.
                    resolved = snapshot
                    resolve_by = monotonic() + STREAM_RESOLVE_SECONDS
                    call = self._caller(context, fresh=True)
                yield answer(request, call)
        except (grpc.RpcError, FetchAbandonedError):
            return  # the client cancelled the stream (gRPC raises it from the request iterator) or left while a fetch waited
        except _EXPECTED_ERRORS as error:
            context.abort(grpc_status(error), str(error))
        except Exception as error:
            logger.exception("%sStream failed unexpectedly", unary_method)
            context.abort(grpc_status(error), f"unexpected server error: {type(error).__name__}: {error}")
        finally:
            slots.release()

    def _produce(self, request: broker_pb2.ProduceRequest, call: CallContext) -> broker_pb2.ProduceResponse:
        partitions = [ProducePartition(topic, partition, records) for topic, partition, records in request_parsing.produce_entries(request)]
        record_bytes.note(sum(len(item.records) for item in partitions))  # for the request metrics: reading the field again copies it
        result = produce_requests.produce(
            self.broker, call, partitions, acks=request.acks, timeout_ms=request.timeout_ms, transactional_id=request.transactional_id
        )
        self._throttle(result.throttle_ms)
        # Built in place, as the Fetch answer: messages handed to a constructor are serialized and parsed
        # again by upb (one partition's answer, build + serialize: 15-17 -> 7-10 us).
        answer = broker_pb2.ProduceResponse(throttle_time_ms=result.throttle_ms)
        topics: dict[str, broker_pb2.ProduceTopicResponse] = {}
        for item in result.partitions:
            partition = _topic_in_place(topics, answer.topics, item.topic).partitions.add(
                partition=item.partition,
                error_code=item.error_code,
                error_message=item.error_message,
                base_offset=item.base_offset,
                log_append_time_ms=item.log_append_time_ms,
                log_start_offset=item.log_start_offset,
            )
            for index, message in item.record_errors:
                partition.record_errors.add(batch_index=index, message=message)
        return answer

    @_handler
    def Fetch(self, request: broker_pb2.FetchRequest, call: CallContext) -> broker_pb2.FetchResponse:
        return self._fetch(request, call)

    def _fetch(self, request: broker_pb2.FetchRequest, call: CallContext, departure: Departure | None = None) -> broker_pb2.FetchResponse:
        """One Fetch, unary or on a stream (``departure``: the stream's client leaving ends its wait, FetchAbandonedError)."""
        partitions = request_parsing.fetch_partitions(request, self._partition_max_bytes)
        result = fetch_requests.fetch(
            self.broker, call, partitions, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes, max_bytes=request.max_bytes, departure=departure
        )
        self._throttle(result.throttle_ms)
        # Built in place: messages handed to a constructor are merged by serializing and parsing each
        # again (protobuf's upb), which copied every answer's records twice more (one-record answer,
        # build + serialize: 16.7 -> 3.1 us; 1 MB: 2.9 -> 1.8 ms).
        answer = broker_pb2.FetchResponse(throttle_time_ms=result.throttle_ms)
        topics: dict[str, broker_pb2.FetchTopicResponse] = {}
        answered_bytes = 0
        for item in result.partitions:
            partition = _topic_in_place(topics, answer.topics, item.topic).partitions.add(
                partition=item.partition,
                error_code=item.error_code,
                error_message=item.error_message,
                high_watermark=item.high_watermark,
                last_stable_offset=item.last_stable_offset,
                log_start_offset=item.log_start_offset,
                records=item.records,
            )
            answered_bytes += len(item.records)
            diverging = _epoch_end_offset(item.diverging_epoch)
            if diverging is not None:
                partition.diverging_epoch.CopyFrom(diverging)
            for entry in item.aborted_transactions or ():
                partition.aborted_transactions.add(producer_id=entry.producer_id, first_offset=entry.first_offset)
        record_bytes.note(answered_bytes)  # for the request metrics: reading the field again copies it
        if stage_trace.ENABLED:
            for requested in request.topics:
                for wanted in requested.partitions:
                    stage_trace.stamp(consumer_fetch_trace.ANSWER_RETURNED, call.qualify(requested.topic), wanted.partition, wanted.fetch_offset)
        return answer

    @_handler
    def ListOffsets(self, request: broker_pb2.ListOffsetsRequest, call: CallContext) -> broker_pb2.ListOffsetsResponse:
        isolation_level = READ_COMMITTED if request.isolation_level == broker_pb2.READ_COMMITTED else READ_UNCOMMITTED
        wanted = [
            ListOffsetsPartition(topic, partition, timestamp, isolation_level=isolation_level)
            for topic, partition, timestamp in request_parsing.list_offsets_partitions(request)
        ]
        responses = [
            (
                item.topic,
                broker_pb2.ListOffsetsPartitionResponse(
                    partition=item.partition,
                    error_code=item.error_code,
                    error_message=item.error_message,
                    timestamp=item.timestamp,
                    offset=item.offset,
                    leader_epoch=item.leader_epoch,
                ),
            )
            for item in list_offsets_requests.list_offsets(self.broker, call, wanted)
        ]
        return broker_pb2.ListOffsetsResponse(
            topics=[broker_pb2.ListOffsetsTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    # ------------------------------------------------------------------ producer ids and committed offsets

    @_handler
    def InitProducerId(self, request: broker_pb2.InitProducerIdRequest, call: CallContext) -> broker_pb2.InitProducerIdResponse:
        """An idempotent producer's id and epoch, or, with a transactional id, those its transaction coordinator gives (fencing older producers of the id)."""
        if request.transactional_id:
            outcome = transaction_requests.init_transactional_producer(
                self.broker,
                call,
                transactional_id=request.transactional_id,
                timeout_ms=request.transaction_timeout_ms,
                producer_id=request.producer_id,
                producer_epoch=request.producer_epoch,
            )
        else:
            outcome = producer_id_requests.init_producer_id(
                self.broker, call, transactional_id="", producer_id=request.producer_id, producer_epoch=request.producer_epoch
            )
        return broker_pb2.InitProducerIdResponse(
            error_code=outcome.error_code, error_message=outcome.error_message, producer_id=outcome.producer_id, producer_epoch=outcome.producer_epoch
        )

    @_handler
    def OffsetCommit(self, request: broker_pb2.OffsetCommitRequest, call: CallContext) -> broker_pb2.OffsetCommitResponse:
        entries = [
            OffsetCommitEntry(topic.topic, partition.partition, partition.committed_offset, partition.committed_leader_epoch, partition.metadata)
            for topic in request.topics
            for partition in topic.partitions
        ]
        outcome = group_offset_requests.commit_offsets(self.broker, call, request.group_id, request.member_id, request.generation_id, entries)
        if outcome.error_code != NO_ERROR:
            return broker_pb2.OffsetCommitResponse(error_code=outcome.error_code, error_message=outcome.error_message)
        responses = [
            (item.topic, broker_pb2.OffsetCommitPartitionResponse(partition=item.partition, error_code=item.error_code, error_message=item.error_message))
            for item in outcome.partitions
        ]
        return broker_pb2.OffsetCommitResponse(
            topics=[broker_pb2.OffsetCommitTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    @_handler
    def OffsetFetch(self, request: broker_pb2.OffsetFetchRequest, call: CallContext) -> broker_pb2.OffsetFetchResponse:
        wanted = [(topic.topic, partition) for topic in request.topics for partition in topic.partitions] if request.topics else None
        outcome = group_offset_requests.fetch_offsets(self.broker, call, request.group_id, wanted)
        if outcome.error_code != NO_ERROR:
            return broker_pb2.OffsetFetchResponse(error_code=outcome.error_code, error_message=outcome.error_message)
        responses = [
            (
                item.topic,
                broker_pb2.OffsetFetchPartitionResponse(
                    partition=item.partition,
                    committed_offset=item.offset,
                    committed_leader_epoch=item.leader_epoch,
                    metadata=item.metadata,
                    error_code=item.error_code,
                    error_message=item.error_message,
                ),
            )
            for item in outcome.partitions
        ]
        return broker_pb2.OffsetFetchResponse(
            topics=[broker_pb2.OffsetFetchTopicResponse(topic=topic, partitions=items) for topic, items in _group_by_topic(responses).items()]
        )

    @_handler
    def FindCoordinator(self, request: broker_pb2.FindCoordinatorRequest, call: CallContext) -> broker_pb2.FindCoordinatorResponse:
        """Each group's (or, with key type TRANSACTION, each transactional id's) coordinator, in request order, at its gRPC address."""
        request_parsing.require_nonempty(request.group_ids, "group id" if request.key_type == broker_pb2.COORDINATOR_KEY_TYPE_GROUP else "transactional id")
        this_broker = BrokerEndpoint(self._node.node_id, self._node.host, self._node.port, self._node.rack)
        find: Callable[[Broker, CallContext, Sequence[str], BrokerEndpoint], list[CoordinatorOutcome]]
        if request.key_type == broker_pb2.COORDINATOR_KEY_TYPE_GROUP:
            find = coordinator_lookup_requests.find_group_coordinators
        elif request.key_type == broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION:
            find = coordinator_lookup_requests.find_transaction_coordinators
        else:
            raise InvalidRequestError(f"coordinator key type {request.key_type} is not supported")
        coordinators = []
        for outcome in find(self.broker, call, list(request.group_ids), this_broker):
            if outcome.node is None:
                # Kafka's Node.noNode(): id -1, no host, port -1.
                coordinators.append(
                    broker_pb2.Coordinator(
                        group_id=outcome.group_id, node_id=-1, host="", port=-1, error_code=outcome.error_code, error_message=outcome.error_message
                    )
                )
            else:
                node = outcome.node
                coordinators.append(broker_pb2.Coordinator(group_id=outcome.group_id, node_id=node.node_id, host=node.host, port=node.port))
        return broker_pb2.FindCoordinatorResponse(coordinators=coordinators)

    # ------------------------------------------------------------------ consumer groups (KIP-848)

    @_handler
    def ConsumerGroupHeartbeat(self, request: broker_pb2.ConsumerGroupHeartbeatRequest, call: CallContext) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        """Join, heartbeat or leave (READ on the group; READ on each subscribed topic)."""
        outcome = group_requests.consumer_group_heartbeat(self.broker, call, request.group_id, lambda: group_messages.heartbeat_request(request, call))
        if outcome.answer is None:
            return broker_pb2.ConsumerGroupHeartbeatResponse(
                error_code=outcome.error_code, error_message=outcome.error_message, member_id=request.member_id, member_epoch=request.member_epoch
            )
        return group_messages.heartbeat_response(outcome.answer, call)

    @_handler
    def ConsumerGroupDescribe(self, request: broker_pb2.ConsumerGroupDescribeRequest, call: CallContext) -> broker_pb2.ConsumerGroupDescribeResponse:
        """Each group's state, members and assignments, in request order (DESCRIBE on the group); classic groups too."""
        groups = []
        for outcome in group_requests.describe_groups(self.broker, call, list(request.group_ids)):
            if outcome.snapshot is not None:
                description = group_messages.group_description(outcome.snapshot, call)
                if request.include_authorized_operations:
                    description.authorized_operations_included = True
                    description.authorized_operations.extend(
                        sorted(operation.name for operation in group_requests.authorized_group_operations(call, outcome.group_id))
                    )
                groups.append(description)
            else:
                state = group_requests.dead_state(outcome.error_code)
                groups.append(
                    broker_pb2.GroupDescription(group_id=outcome.group_id, error_code=outcome.error_code, error_message=outcome.error_message, state=state)
                )
        return broker_pb2.ConsumerGroupDescribeResponse(groups=groups)

    @_handler
    def ListGroups(self, request: broker_pb2.ListGroupsRequest, call: CallContext) -> broker_pb2.ListGroupsResponse:
        """The groups this broker coordinates that the caller may describe, optionally only those in the given states and of the given types."""
        groups = [
            broker_pb2.ListedGroup(group_id=group.group_id, state=group.state.value, protocol_type=group.protocol_type, group_type=group.group_type)
            for group in group_requests.list_groups(self.broker, call, list(request.states_filter), list(request.types_filter))
        ]
        return broker_pb2.ListGroupsResponse(groups=groups)

    @_handler
    def DeleteGroups(self, request: broker_pb2.DeleteGroupsRequest, call: CallContext) -> broker_pb2.DeleteGroupsResponse:
        """Delete groups without members, with their committed offsets (DELETE on the group)."""
        results = [
            broker_pb2.DeletedGroup(group_id=result.group_id, error_code=result.error_code, error_message=result.error_message)
            for result in group_requests.delete_groups(self.broker, call, list(request.group_ids))
        ]
        return broker_pb2.DeleteGroupsResponse(groups=results)

    # ------------------------------------------------------------------ transactions

    @_handler
    def AddPartitionsToTxn(self, request: broker_pb2.AddPartitionsToTxnRequest, call: CallContext) -> broker_pb2.AddPartitionsToTxnResponse:
        """Partitions join the producer's transaction (WRITE on each topic); all or none."""
        topics: dict[str, list[int]] = {}
        for topic in request.topics:
            topics.setdefault(topic.topic, []).extend(topic.partitions)
        outcomes = transaction_requests.add_partitions_to_txn(
            self.broker,
            call,
            transactional_id=request.transactional_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            topics=topics,
        )
        return broker_pb2.AddPartitionsToTxnResponse(topics=_partition_results(outcomes))

    @_handler
    def AddOffsetsToTxn(self, request: broker_pb2.AddOffsetsToTxnRequest, call: CallContext) -> broker_pb2.AddOffsetsToTxnResponse:
        """The group's offsets join the producer's transaction (READ on the group)."""
        outcome = transaction_requests.add_offsets_to_txn(
            self.broker,
            call,
            transactional_id=request.transactional_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            group_id=request.group_id,
        )
        return broker_pb2.AddOffsetsToTxnResponse(error_code=outcome.error_code, error_message=outcome.error_message)

    @_handler
    def EndTxn(self, request: broker_pb2.EndTxnRequest, call: CallContext) -> broker_pb2.EndTxnResponse:
        """Commit or abort; always with KIP-890's epoch bump (Kafka's EndTxn v5): the answer carries the epoch to use next."""
        outcome = transaction_requests.end_txn(
            self.broker,
            call,
            transactional_id=request.transactional_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            commit=request.committed,
            bump_epoch=True,
        )
        return broker_pb2.EndTxnResponse(
            error_code=outcome.error_code, error_message=outcome.error_message, producer_id=outcome.producer_id, producer_epoch=outcome.producer_epoch
        )

    @_handler
    def TxnOffsetCommit(self, request: broker_pb2.TxnOffsetCommitRequest, call: CallContext) -> broker_pb2.TxnOffsetCommitResponse:
        """A group's offsets committed inside a transaction (after AddOffsetsToTxn): the group's offsets once it commits (READ on the group and each topic)."""
        offsets = [
            OffsetCommitEntry(topic.topic, partition.partition, partition.committed_offset, partition.committed_leader_epoch, partition.metadata)
            for topic in request.topics
            for partition in topic.partitions
        ]
        outcomes = transaction_requests.txn_offset_commit(
            self.broker,
            call,
            transactional_id=request.transactional_id,
            group_id=request.group_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            generation_id=request.generation_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            offsets=offsets,
        )
        return broker_pb2.TxnOffsetCommitResponse(topics=_partition_results(outcomes))

    # ------------------------------------------------------------------ operators' view of transactions

    @_handler
    def DescribeTransactions(self, request: broker_pb2.DescribeTransactionsRequest, call: CallContext) -> broker_pb2.DescribeTransactionsResponse:
        """Each transactional id's state from its coordinator (this broker; NOT_COORDINATOR otherwise), in request order."""
        described = transaction_requests.describe_transactions(self.broker, call, list(request.transactional_ids))
        return broker_pb2.DescribeTransactionsResponse(transactions=[_transaction_description(item) for item in described])

    @_handler
    def ListTransactions(self, request: broker_pb2.ListTransactionsRequest, call: CallContext) -> broker_pb2.ListTransactionsResponse:
        """The caller's transactional ids this broker coordinates, filtered by state, producer id and open duration."""
        states = list(request.state_filters)
        listed = transaction_requests.list_transactions(
            self.broker,
            call,
            states=states,
            producer_ids=list(request.producer_id_filters),
            min_duration_ms=request.duration_filter_ms if request.duration_filter_ms > 0 else -1,
        )
        return broker_pb2.ListTransactionsResponse(
            unknown_state_filters=[state for state in states if state not in _TRANSACTION_STATES],
            transactions=[_transaction_description(item) for item in listed],
        )

    @_handler
    def AbortTransaction(self, request: broker_pb2.AbortTransactionRequest, call: CallContext) -> broker_pb2.AbortTransactionResponse:
        """Abort by transactional id (at its coordinator) or a hanging transaction's partition (at its leader)."""
        target = request.WhichOneof("target")
        if target == "transactional_id":
            aborted = transaction_admin_requests.abort_transaction(self.broker, call, request.transactional_id)
            return broker_pb2.AbortTransactionResponse(error_code=aborted.error_code, error_message=aborted.error_message)
        if target != "hanging":
            raise InvalidRequestError("AbortTransaction needs a transactional_id or a hanging transaction's partition")
        hanging = request.hanging
        outcome = transaction_admin_requests.abort_hanging(
            self.broker,
            call,
            topic=hanging.topic,
            partition=hanging.partition,
            producer_id=hanging.producer_id,
            producer_epoch=hanging.producer_epoch,
            coordinator_epoch=hanging.coordinator_epoch,
        )
        return broker_pb2.AbortTransactionResponse(error_code=outcome.error_code, error_message=outcome.error_message)

    @_handler
    def FindHangingTransactions(self, request: broker_pb2.FindHangingTransactionsRequest, call: CallContext) -> broker_pb2.FindHangingTransactionsResponse:
        """The hanging transactions of the topic's partitions led here (Kafka's find-hanging)."""
        outcomes = transaction_admin_requests.find_hanging(self.broker, call, request.topic, list(request.partitions) or None)
        return broker_pb2.FindHangingTransactionsResponse(
            partitions=[
                broker_pb2.HangingPartition(
                    partition=outcome.partition,
                    error_code=outcome.error_code,
                    error_message=outcome.error_message,
                    transactions=[
                        broker_pb2.OpenTransaction(
                            target=broker_pb2.HangingTransaction(
                                topic=item.topic,
                                partition=item.partition,
                                producer_id=item.producer_id,
                                producer_epoch=item.producer_epoch,
                                coordinator_epoch=item.coordinator_epoch,
                            ),
                            start_offset=item.start_offset,
                            last_timestamp_ms=item.last_timestamp_ms,
                            open_for_ms=item.open_for_ms,
                        )
                        for item in outcome.hanging
                    ],
                )
                for outcome in outcomes
            ]
        )


_TRANSACTION_STATES = frozenset(state.kafka_name for state in TransactionState)


def _transaction_description(item: transaction_requests.TransactionDescription) -> broker_pb2.TransactionDescription:
    return broker_pb2.TransactionDescription(
        transactional_id=item.transactional_id,
        error_code=item.error_code,
        error_message=item.error_message,
        state=item.state,
        producer_id=item.producer_id,
        producer_epoch=item.producer_epoch,
        transaction_timeout_ms=item.timeout_ms,
        transaction_start_time_ms=item.start_timestamp_ms,
        topics=[broker_pb2.TopicPartitions(topic=topic, partitions=list(partitions)) for topic, partitions in item.partitions.items()],
    )


def _converted(message: Message, into: type[Converted]) -> Converted:
    """``message`` as ``into``, a message of the same fields and numbers (broker.proto's client ACL
    messages and controller.proto's forwarded ones): by its bytes, so no field is copied by hand."""
    return into.FromString(message.SerializeToString())


def _topic_operations(call: CallContext, topic: metadata_requests.TopicDescription, requested: bool) -> dict[str, Any]:
    """A described topic's authorized-operations fields: the caller's operations on it (KIP-430) when asked."""
    if not requested or topic.error_code:
        return {}
    names = sorted(operation.name for operation in metadata_requests.authorized_topic_operations(call, topic.name))
    return {"authorized_operations_included": True, "authorized_operations": names}
