"""``/topics``: list, create, get, delete; partitions (list, get, grow) and their replicas;
configs (get, alter)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.api.query import validated_query_data
from webapp.api.serializers.common import JobResponseSerializer, NameFilterSerializer, job_summary
from webapp.api.serializers.topics import (
    TOPIC_ROW_FIELDS,
    ConfigAlterSerializer,
    PartitionSerializer,
    PartitionsGrowSerializer,
    ReplicaSerializer,
    TopicConfigSerializer,
    TopicCreateSerializer,
    TopicSerializer,
    TopicWithJobSerializer,
)
from webapp.api.views.base import CONFLICT, TenantScopedViewSet
from webapp.catalog.facade import (
    Partition,
    Topic,
    check_alter_topic_configs,
    check_create_partitions,
    check_create_topic,
    describe_topic_configs,
    do_alter_topic_configs,
    do_create_partitions,
    do_create_topic,
    do_delete_topic,
    health_counts_by_topic,
    min_insync_replicas,
    replica_states,
    topic_row_with_health_counts,
)
from webapp.provisioning.facade import describe_partitions

PartitionListSerializer = inline_serializer("KafkaPartitionList", {"kind": serializers.CharField(), "data": PartitionSerializer(many=True)})
TopicConfigListSerializer = inline_serializer("KafkaTopicConfigList", {"kind": serializers.CharField(), "data": TopicConfigSerializer(many=True)})
ReplicaListSerializer = inline_serializer("KafkaReplicaList", {"kind": serializers.CharField(), "data": ReplicaSerializer(many=True)})


class TopicViewSet(TenantScopedViewSet):
    queryset = Topic.objects.all()
    serializer_class = TopicSerializer
    lookup_field = "name"
    lookup_url_kwarg = "topic_name"
    lookup_value_regex = r"[^/:]+"

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if getattr(self, "swagger_fake_view", False):
            return context
        context["tenant_public_id"] = self.actor.tenant.public_id
        return context

    @extend_schema(parameters=[NameFilterSerializer])
    def list(self, request: Request) -> Response:
        name = validated_query_data(NameFilterSerializer, request).get("name")
        topics = self.get_queryset()
        if name:
            topics = topics.filter(name__icontains=name)
        # Rows of the columns the shape reads, not Topic instances (building those was a third of
        # the page's CPU); the page's health counts come from one query of tuples too.
        rows = topics.values_list(*TOPIC_ROW_FIELDS, named=True)
        page = self.paginate_queryset(rows)
        topics_of_page = list(page) if page is not None else list(rows)
        context = {**self.get_serializer_context(), "health_counts": health_counts_by_topic(topics_of_page)}
        return self.get_paginated_response(TopicSerializer(topics_of_page, many=True, context=context).data)

    @extend_schema(request=TopicCreateSerializer, responses={201: TopicWithJobSerializer, 409: CONFLICT})
    def create(self, request: Request) -> Response:
        payload = TopicCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        values = payload.validated_data
        new_topic = check_create_topic(self.actor, values["topic_name"], values["partitions_count"], values.get("replication_factor"), values["configs"])
        change = do_create_topic(self.actor, new_topic, self.request_id)
        context = {**self.get_serializer_context(), "job": job_summary(change.job, request)}
        return Response(TopicWithJobSerializer(change.topic, context=context).data, status=status.HTTP_201_CREATED)

    def retrieve(self, request: Request, topic_name: str) -> Response:
        # The topic's columns and its partitions' health from one query (a row per partition).
        found = topic_row_with_health_counts(self.get_queryset().filter(name=topic_name), TOPIC_ROW_FIELDS)
        if found is None:
            raise Http404("No Topic matches the given query.")  # what get_object answers
        topic, health = found
        self.check_object_permissions(request, topic)
        context = {**self.get_serializer_context(), "health_counts": {topic.pk: health}}
        return Response(TopicSerializer(topic, context=context).data)

    @extend_schema(responses={202: JobResponseSerializer})
    def destroy(self, request: Request, topic_name: str) -> Response:
        job = do_delete_topic(self.actor, self.get_object(), self.request_id)
        return Response({"job": job_summary(job, request)}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(methods=["GET"], operation_id="v1_topics_partitions_list", request=None, responses={200: PartitionListSerializer})
    @extend_schema(
        methods=["POST"],
        operation_id="v1_topics_partitions_create",
        request=PartitionsGrowSerializer,
        responses={202: TopicWithJobSerializer},
        description="Grow the topic to partitions_count partitions (never shrinks).",
    )
    @action(detail=True, methods=["get", "post"], url_path="partitions", url_name="partitions")
    def partitions(self, request: Request, topic_name: str) -> Response:
        topic = self.get_object()
        if request.method == "POST":
            payload = PartitionsGrowSerializer(data=request.data)
            payload.is_valid(raise_exception=True)
            count = check_create_partitions(self.actor, topic, payload.validated_data["partitions_count"])
            change = do_create_partitions(self.actor, topic, count, self.request_id)
            context = {**self.get_serializer_context(), "job": job_summary(change.job, request)}
            return Response(TopicWithJobSerializer(change.topic, context=context).data, status=status.HTTP_202_ACCEPTED)
        descriptions = describe_partitions(topic)
        return Response({"kind": "KafkaPartitionList", "data": self._partition_data(topic, descriptions)})

    @extend_schema(operation_id="v1_topics_partition_retrieve", responses={200: PartitionSerializer})
    @action(detail=True, methods=["get"], url_path=r"partitions/(?P<partition_id>[0-9]+)", url_name="partition-detail")
    def partition(self, request: Request, topic_name: str, partition_id: str) -> Response:
        topic = self.get_object()
        index = int(partition_id)
        if index >= topic.partition_count:
            raise NotFound(f"Topic '{topic.name}' has no partition {index}.")
        descriptions = [description for description in describe_partitions(topic) if description.partition == index]
        if not descriptions:
            raise NotFound(f"Topic '{topic.name}' has no partition {index}.")
        return Response(self._partition_data(topic, descriptions)[0])

    @extend_schema(
        operation_id="v1_topics_partition_replicas_list",
        responses={200: ReplicaListSerializer},
        description="The partition's replicas, the preferred leader first, as the controller last recorded them.",
    )
    @action(detail=True, methods=["get"], url_path=r"partitions/(?P<partition_id>[0-9]+)/replicas", url_name="partition-replicas")
    def replicas(self, request: Request, topic_name: str, partition_id: str) -> Response:
        topic, partition = self._partition_row(partition_id)
        return Response(
            {"kind": "KafkaReplicaList", "data": self._replica_data(topic, partition, replica_states(partition.leader, partition.replicas, partition.isr))}
        )

    @extend_schema(
        operation_id="v1_topics_partition_replica_retrieve",
        responses={200: ReplicaSerializer},
        description="The partition's replica on one broker: whether it leads and whether it is in sync.",
    )
    @action(detail=True, methods=["get"], url_path=r"partitions/(?P<partition_id>[0-9]+)/replicas/(?P<broker_id>[0-9]+)", url_name="partition-replica")
    def replica(self, request: Request, topic_name: str, partition_id: str, broker_id: str) -> Response:
        topic, partition = self._partition_row(partition_id)
        states = [state for state in replica_states(partition.leader, partition.replicas, partition.isr) if state[0] == int(broker_id)]
        if not states:
            raise NotFound(f"Partition {partition.index} of topic '{topic.name}' has no replica on broker {broker_id}.")
        return Response(self._replica_data(topic, partition, states)[0])

    @extend_schema(responses={200: TopicConfigListSerializer})
    @action(detail=True, methods=["get"], url_path="configs", url_name="configs")
    def configs(self, request: Request, topic_name: str) -> Response:
        topic = self.get_object()
        context = {**self.get_serializer_context(), "topic_name": topic.name}
        data = TopicConfigSerializer(describe_topic_configs(topic), many=True, context=context).data
        return Response({"kind": "KafkaTopicConfigList", "data": data})

    @extend_schema(request=ConfigAlterSerializer, responses={202: JobResponseSerializer})
    @action(detail=True, methods=["post"], url_path="configs:alter", url_name="configs-alter")
    def alter_configs(self, request: Request, topic_name: str) -> Response:
        topic = self.get_object()
        payload = ConfigAlterSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        operations = [(entry["name"], entry["operation"], entry.get("value")) for entry in payload.validated_data["data"]]
        overrides = check_alter_topic_configs(self.actor, topic, operations)
        change = do_alter_topic_configs(self.actor, topic, overrides, self.request_id)
        return Response({"job": job_summary(change.job, request)}, status=status.HTTP_202_ACCEPTED)

    def _partition_data(self, topic: Topic, descriptions: list[Any]) -> list[dict[str, Any]]:
        context = {**self.get_serializer_context(), "topic_name": topic.name, "min_insync_replicas": min_insync_replicas(topic.configs)}
        return PartitionSerializer(descriptions, many=True, context=context).data  # type: ignore[return-value]

    def _partition_row(self, partition_id: str) -> tuple[Topic, Partition]:
        """The caller's topic named in the URL and its partition ``partition_id``, else 404."""
        topic = self.get_object()
        index = int(partition_id)
        # Compared before querying: an index too large for the column is simply not found.
        partition = Partition.objects.filter(topic=topic, index=index).first() if index < topic.partition_count else None
        if partition is None:
            raise NotFound(f"Topic '{topic.name}' has no partition {index}.")
        return topic, partition

    def _replica_data(self, topic: Topic, partition: Partition, states: list[tuple[int, bool, bool]]) -> list[dict[str, Any]]:
        context = {**self.get_serializer_context(), "topic_name": topic.name, "partition_id": partition.index}
        replicas = [{"broker_id": broker_id, "is_leader": is_leader, "is_in_sync": in_sync} for broker_id, is_leader, in_sync in states]
        return ReplicaSerializer(replicas, many=True, context=context).data  # type: ignore[return-value]
