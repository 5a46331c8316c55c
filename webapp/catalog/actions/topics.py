"""Topic actions: create, delete, alter configs, add partitions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from webapp.accounts.facade import Actor, Conflict, InvalidInput, Role, Tenant, require_role
from webapp.audit.facade import record_event
from webapp.catalog.limits import check_growth_fits_plan
from webapp.catalog.models import Topic
from webapp.catalog.placement_rows import PlacementError, place_partitions
from webapp.catalog.topic_names import topic_name_problem
from webapp.common.changes import JobKind, RecordedChange, record_change
from webapp.fleet.facade import default_replication_factor
from weir.topic_config import TOPIC_CONFIGS, InvalidConfigError, validate_topic_configs


class ConfigOperation:
    """The operations of ``configs:alter``, as Confluent's REST v3 names them."""

    SET = "SET"
    DELETE = "DELETE"


@dataclass(frozen=True)
class NewTopic:
    """A validated topic creation request."""

    name: str
    partitions_count: int
    replication_factor: int
    configs: Mapping[str, str]


@dataclass(frozen=True)
class TopicChange:
    """What a topic action did: the topic as it is now and the job that pushes it."""

    topic: Topic
    job: RecordedChange


def config_errors(configs: Mapping[str, object]) -> dict[str, list[str]]:
    """Field errors keyed by config name: unknown keys and bad values, all at once."""
    errors: dict[str, list[str]] = {}
    for name, value in configs.items():
        try:
            validate_topic_configs({name: value})
        except InvalidConfigError as error:
            errors[name] = [str(error)]
    return errors


def check_create_topic(actor: Actor, name: str, partitions_count: int, replication_factor: int | None, configs: Mapping[str, object]) -> NewTopic:
    """Validate a creation request (name rules, including the length that fits a partition
    directory with the tenant's prefix; per-topic partition limit; replication factor at least
    one, or None for the default, min(3, brokers); configs against the declared table). The
    broker count and the tenant-wide limits are checked by :func:`do_create_topic` under a lock."""
    require_role(actor, Role.DEVELOPER, "create topics")
    errors: dict[str, object] = {}
    problem = topic_name_problem(name, actor.tenant.public_id)
    if problem:
        errors["topic_name"] = [problem]
    limits = actor.tenant.limits
    if not 1 <= partitions_count <= limits.max_partitions_per_topic:
        errors["partitions_count"] = [f"A topic has 1 to {limits.max_partitions_per_topic} partitions on the {actor.tenant.plan} plan."]
    if replication_factor is None:
        replication_factor = default_replication_factor()
    elif replication_factor < 1:
        errors["replication_factor"] = ["The replication factor is at least 1."]
    problems = config_errors(configs)
    if problems:
        errors["configs"] = problems
    if errors:
        raise InvalidInput(errors)
    return NewTopic(name, partitions_count, replication_factor, {key: str(value) for key, value in configs.items()})


def do_create_topic(actor: Actor, new_topic: NewTopic, request_id: str = "") -> TopicChange:
    """Store the topic and its placement and record the CREATE_TOPIC job, all or nothing."""
    try:
        with transaction.atomic():
            tenant = Tenant.objects.select_for_update().get(pk=actor.tenant.pk)
            if Topic.objects.filter(tenant=tenant, name=new_topic.name).exists():
                raise Conflict(f"Topic '{new_topic.name}' already exists.")
            check_growth_fits_plan(tenant, new_topics=1, new_partitions=new_topic.partitions_count)
            topic = Topic.objects.create(
                tenant=tenant,
                name=new_topic.name,
                partition_count=new_topic.partitions_count,
                replication_factor=new_topic.replication_factor,
                configs=dict(new_topic.configs),
            )
            _place(topic, 0, new_topic.partitions_count)
            job = record_change(tenant, JobKind.CREATE_TOPIC, topic.name, created_by=actor.user, request_id=request_id)
            record_event(
                actor,
                "topic.create",
                topic.name,
                {"partitions": new_topic.partitions_count, "replication_factor": new_topic.replication_factor, "configs": dict(new_topic.configs)},
            )
    except IntegrityError as error:
        # Two creations of one name raced past the existence check; the constraint decides.
        raise Conflict(f"Topic '{new_topic.name}' already exists.") from error
    return TopicChange(topic, job)


def do_delete_topic(actor: Actor, topic: Topic, request_id: str = "") -> RecordedChange:
    """Delete the topic's desired state (its partitions go with it) and record DELETE_TOPIC.
    ACL bindings naming the topic stay, as in Kafka: they apply again to a topic of that name."""
    require_role(actor, Role.DEVELOPER, "delete topics")
    with transaction.atomic():
        name = topic.name
        Topic.objects.filter(pk=topic.pk, tenant=actor.tenant).delete()
        record_event(actor, "topic.delete", name, {"partitions": topic.partition_count})
        return record_change(actor.tenant, JobKind.DELETE_TOPIC, name, created_by=actor.user, request_id=request_id)


def check_alter_topic_configs(actor: Actor, topic: Topic, operations: Iterable[tuple[str, str, str | None]]) -> dict[str, str]:
    """The topic's overrides after applying ``(name, operation, value)`` in order; SET needs a
    valid value, DELETE returns the key to its default. Every bad entry is reported."""
    require_role(actor, Role.DEVELOPER, "alter topic configs")
    overrides = dict(topic.configs)
    errors: dict[str, list[str]] = {}
    for name, operation, value in operations:
        if name not in TOPIC_CONFIGS:
            errors[name] = [f"Unknown topic config '{name}'."]
        elif operation == ConfigOperation.DELETE:
            overrides.pop(name, None)
        elif value is None:
            errors[name] = [f"SET of '{name}' needs a value."]
        else:
            problems = config_errors({name: value})
            if problems:
                errors.update(problems)
            else:
                overrides[name] = str(value)
    if errors:
        raise InvalidInput({"configs": errors})
    return overrides


def do_alter_topic_configs(actor: Actor, topic: Topic, overrides: Mapping[str, str], request_id: str = "") -> TopicChange:
    """Replace the topic's overrides and record ALTER_TOPIC_CONFIGS."""
    with transaction.atomic():
        locked = Topic.objects.select_for_update().get(pk=topic.pk, tenant=actor.tenant)
        previous = dict(locked.configs)
        locked.configs = dict(overrides)
        record_event(actor, "topic.alter_configs", locked.name, {"configs": dict(overrides), "previous": previous})
        locked.save(update_fields=["configs", "updated_at"])
        job = record_change(actor.tenant, JobKind.ALTER_TOPIC_CONFIGS, locked.name, created_by=actor.user, request_id=request_id)
    return TopicChange(locked, job)


def check_create_partitions(actor: Actor, topic: Topic, partitions_count: int) -> int:
    """Validate growing ``topic`` to ``partitions_count`` partitions (Kafka never shrinks)."""
    require_role(actor, Role.DEVELOPER, "add partitions")
    limit = actor.tenant.limits.max_partitions_per_topic
    if partitions_count <= topic.partition_count:
        raise InvalidInput.for_field(
            "partitions_count",
            f"Partitions can only be added: the topic has {topic.partition_count}, so ask for more than that.",
        )
    if partitions_count > limit:
        raise InvalidInput.for_field("partitions_count", f"A topic has at most {limit} partitions on the {actor.tenant.plan} plan.")
    return partitions_count


def do_create_partitions(actor: Actor, topic: Topic, partitions_count: int, request_id: str = "") -> TopicChange:
    """Grow the topic, place the new partitions, record CREATE_PARTITIONS."""
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=actor.tenant.pk)
        locked = Topic.objects.select_for_update().get(pk=topic.pk, tenant=tenant)
        current = locked.partition_count
        if partitions_count <= current:
            # Another request grew the topic meanwhile.
            raise InvalidInput.for_field("partitions_count", f"Partitions can only be added: the topic has {current}.")
        check_growth_fits_plan(tenant, new_topics=0, new_partitions=partitions_count - current)
        locked.partition_count = partitions_count
        record_event(actor, "topic.create_partitions", locked.name, {"partitions": partitions_count, "previous": current})
        locked.save(update_fields=["partition_count", "updated_at"])
        _place(locked, current, partitions_count - current)
        job = record_change(tenant, JobKind.CREATE_PARTITIONS, locked.name, created_by=actor.user, request_id=request_id)
    return TopicChange(locked, job)


def _place(topic: Topic, start_index: int, count: int) -> None:
    try:
        place_partitions(topic, start_index, count)
    except PlacementError as error:
        raise InvalidInput.for_field("replication_factor", str(error).capitalize() + ".") from error
