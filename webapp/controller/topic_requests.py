"""Topic administration that brokers forward to the controller (CreateTopics, DeleteTopics,
CreatePartitions, AlterConfigs), applied to the catalog exactly like the same REST request.

A broker authenticated the client's cluster key or SCRAM user and checked its ACLs (Kafka semantics:
CREATE, DELETE, ALTER, ALTER_CONFIGS) before forwarding, and the forwarded call carries the
internal token; the caller it names is therefore trusted as given and acts through
:func:`actor_for_forwarded_caller`. From there the path is REST's: the catalog's ``check_*`` /
``do_*`` topic actions validate (names, configs, plan limits under the tenant's lock,
placement over the brokers) and write, and ``record_change`` creates the provisioning job
(the audit record) and bumps the PARTITIONS snapshot version. The controller pushes the new
cluster map itself after the change commits (``ControllerService``), so brokers learn it
even with no Celery worker running.

Every topic (or config resource) of a request gets its own result: Kafka's error code and a
message for the client, from :class:`TopicRequestError`. ``validate_only`` runs the change in
a transaction that is rolled back: the answer covers every check, and nothing is written nor
any job queued (Django drops the on-commit callbacks of a rolled-back transaction).

Internal topics (``__consumer_offsets``...) are never reachable here: they have no tenant,
and a forwarded request without a tenant (the internal token's caller) is refused.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.conf import settings
from django.db import transaction

from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from webapp.accounts.facade import (
    ActionError,
    Actor,
    ApiKey,
    ApiKeyKind,
    Conflict,
    InvalidInput,
    Membership,
    NotAllowed,
    NotFound,
    Role,
    ScramUserCredential,
    ServiceAccount,
    Tenant,
)
from webapp.catalog.facade import (
    ConfigOperation,
    Topic,
    check_alter_topic_configs,
    check_create_partitions,
    check_create_topic,
    do_alter_topic_configs,
    do_create_partitions,
    do_create_topic,
    do_delete_topic,
    topic_name_problem,
)
from webapp.fleet.facade import default_replication_factor
from weir.errors import ErrorCode, error_name, is_retriable

logger = logging.getLogger(__name__)

USE_DEFAULT = -1  # num_partitions / replication_factor of CreatableTopic: the deployment's default
PRINCIPAL_TYPE = "User"  # principals are "User:<public id>" (service accounts sa-..., members u-...) or "User:<SCRAM user name>"

Response = TypeVar("Response")
Result = TypeVar("Result")
Key = TypeVar("Key", bound=Hashable)


class TopicRequestError(Exception):
    """Why one topic or config resource of a forwarded request failed: Kafka's code and a
    message for the client. ``retriable`` follows the code (weir.errors)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retriable = is_retriable(code)

    def __repr__(self) -> str:
        return f"TopicRequestError({error_name(self.code)}, {self.message!r})"


@dataclass(frozen=True)
class Answered(Generic[Response]):
    """The response for the broker, and whether the catalog changed (the map must be pushed)."""

    response: Response
    changed: bool


# ---------------------------------------------------------------------------- the caller


def actor_for_forwarded_caller(caller: controller_pb2.ForwardedCaller) -> Actor:
    """The actor of a data-plane client that a broker authenticated and whose ACLs that broker
    checked: the cluster key's owner (a service account or a member) in its tenant, or the
    tenant's SCRAM user the client logged in as (``caller.scram_user``), with the developer
    role. On the data plane ACLs alone decide what a caller may do, so the role is only what
    the catalog's topic actions ask of any caller, never the owner's dashboard role. Raises
    TopicRequestError: INVALID_REQUEST for a caller without a tenant or naming no owner of
    that tenant, SASL_AUTHENTICATION_FAILED for a revoked key or a deleted SCRAM user.
    """
    if not caller.tenant_id:
        raise TopicRequestError(
            ErrorCode.INVALID_REQUEST,
            "topic administration needs a tenant's API key or SCRAM user; internal topics are managed by the controller only",
        )
    tenant = Tenant.objects.filter(public_id=caller.tenant_id).first()
    if tenant is None:
        raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"no tenant {caller.tenant_id!r}")
    if caller.scram_user:
        return _scram_user_actor(tenant, caller)
    principal_type, _, public_id = caller.principal.partition(":")
    service_account = membership = None
    if principal_type == PRINCIPAL_TYPE and public_id:
        service_account = ServiceAccount.objects.filter(tenant=tenant, public_id=public_id).first()
        if service_account is None:
            membership = Membership.objects.select_related("user").filter(tenant=tenant, public_id=public_id).first()
    if service_account is None and membership is None:
        raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"principal {caller.principal!r} is not a service account or member of tenant {caller.tenant_id}")
    api_key = None
    if caller.api_key:
        api_key = ApiKey.objects.filter(tenant=tenant, kind=ApiKeyKind.CLUSTER, key_id=caller.api_key).first()
        if api_key is None or (api_key.owner_service_account_id, api_key.owner_membership_id) != (
            service_account.pk if service_account else None,
            membership.pk if membership else None,
        ):
            raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"API key {caller.api_key!r} is not a cluster key of {caller.principal}")
        if not api_key.is_active:
            # The broker's credentials lag the catalog by one push; the catalog has the last word.
            raise TopicRequestError(ErrorCode.SASL_AUTHENTICATION_FAILED, f"API key {caller.api_key!r} was revoked")
    return Actor(tenant=tenant, role=Role.DEVELOPER, membership=membership, service_account=service_account, api_key=api_key)


def _scram_user_actor(tenant: Tenant, caller: controller_pb2.ForwardedCaller) -> Actor:
    """The actor of ``tenant``'s SCRAM user ``caller.scram_user`` (principal ``User:<name>``, no key)."""
    if caller.principal != f"{PRINCIPAL_TYPE}:{caller.scram_user}" or caller.api_key:
        raise TopicRequestError(
            ErrorCode.INVALID_REQUEST,
            f"SCRAM user {caller.scram_user!r} acts as {PRINCIPAL_TYPE}:{caller.scram_user} without an API key, not as {caller.principal!r}",
        )
    if not ScramUserCredential.objects.filter(tenant=tenant, user_name=caller.scram_user).exists():
        # The broker's users lag the catalog by one push; the catalog has the last word.
        raise TopicRequestError(ErrorCode.SASL_AUTHENTICATION_FAILED, f"SCRAM user {caller.scram_user!r} was deleted")
    return Actor(tenant=tenant, role=Role.DEVELOPER, scram_user=caller.scram_user)


# ---------------------------------------------------------------------------- defaults


def default_num_partitions(tenant: Tenant) -> int:
    """Partitions of a topic created with ``num_partitions`` -1: WEIR_DEFAULT_NUM_PARTITIONS
    (Kafka's num.partitions, 1), at most what the tenant's plan allows per topic."""
    return min(settings.WEIR_DEFAULT_NUM_PARTITIONS, tenant.limits.max_partitions_per_topic)


# ---------------------------------------------------------------------------- action errors

# Kafka's code for each field the catalog actions name in InvalidInput.errors, in the order
# in which Kafka validates them (the first failing field decides a topic's code).
_CODE_OF_FIELD = {
    "topic_name": ErrorCode.INVALID_TOPIC_EXCEPTION,
    "partitions_count": ErrorCode.INVALID_PARTITIONS,
    "replication_factor": ErrorCode.INVALID_REPLICATION_FACTOR,
    "configs": ErrorCode.INVALID_CONFIG,
}


def _sentences(errors: object, prefix: str = "") -> list[str]:
    """The messages of an InvalidInput field's errors; nested ones (configs) prefixed with their key."""
    if isinstance(errors, dict):
        return [sentence for name, nested in errors.items() for sentence in _sentences(nested, f"{prefix}{name}: ")]
    if isinstance(errors, (list, tuple)):
        return [sentence for item in errors for sentence in _sentences(item, prefix)]
    return [f"{prefix}{errors}"]


def _request_error(error: ActionError, *, plan_fields: Collection[str] = ()) -> TopicRequestError:
    """Kafka's code for a catalog action's error. ``plan_fields``: fields whose errors, at the
    step that raised, can only be plan limits (POLICY_VIOLATION), because the request's
    own shape was checked before."""
    if isinstance(error, Conflict):
        return TopicRequestError(ErrorCode.TOPIC_ALREADY_EXISTS, error.message)
    if isinstance(error, NotFound):
        return TopicRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error.message)
    if isinstance(error, NotAllowed):
        return TopicRequestError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, error.message)
    if isinstance(error, InvalidInput):
        field = next((name for name in _CODE_OF_FIELD if name in error.errors), None)
        if field is None:
            code = ErrorCode.INVALID_REQUEST
        elif field in plan_fields:
            code = ErrorCode.POLICY_VIOLATION
        else:
            code = _CODE_OF_FIELD[field]
        sentences = [sentence for field_errors in error.errors.values() for sentence in _sentences(field_errors)]
        return TopicRequestError(code, " ".join(sentences) or error.message)
    return TopicRequestError(ErrorCode.INVALID_REQUEST, error.message)


@contextmanager
def _rolled_back_if(validate_only: bool) -> Iterator[None]:
    """A transaction that commits, or with ``validate_only`` is rolled back after its body."""
    with transaction.atomic():
        yield
        if validate_only:
            transaction.set_rollback(True)


def _tenant_topic(actor: Actor, name: str) -> Topic:
    topic = Topic.objects.filter(tenant=actor.tenant, name=name).first()
    if topic is None:
        raise TopicRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    return topic


def _duplicates(keys: Sequence[Key]) -> set[Key]:
    return {key for key, count in Counter(keys).items() if count > 1}


def _topic_result(topic: Topic) -> broker_pb2.TopicResult:
    return broker_pb2.TopicResult(
        name=topic.name, topic_id=str(topic.topic_id), num_partitions=topic.partition_count, replication_factor=topic.replication_factor
    )


def _for_each_entry(
    caller: controller_pb2.ForwardedCaller,
    keys: Sequence[Hashable],
    apply: Callable[[Actor, int], Result],
    failed: Callable[[int, TopicRequestError], Result],
) -> tuple[list[Result], bool]:
    """``apply(actor, i)`` for the i-th entry (topic or resource) of a request, a failure
    becoming ``failed(i, error)``; a caller that cannot act fails every entry, and an entry
    whose key (its name) appears twice fails. The flag: some entry succeeded."""
    try:
        actor = actor_for_forwarded_caller(caller)
    except TopicRequestError as error:
        return [failed(index, error) for index in range(len(keys))], False
    duplicates = _duplicates(keys)
    results = []
    succeeded = False
    for index, key in enumerate(keys):
        try:
            if key in duplicates:
                raise TopicRequestError(ErrorCode.INVALID_REQUEST, "named more than once in the request")
            results.append(apply(actor, index))
            succeeded = True
        except TopicRequestError as error:
            results.append(failed(index, error))
    return results, succeeded


def _topic_failed(names: Sequence[str]) -> Callable[[int, TopicRequestError], broker_pb2.TopicResult]:
    return lambda index, error: broker_pb2.TopicResult(name=names[index], error_code=error.code, error_message=error.message)


# ---------------------------------------------------------------------------- CreateTopics


def create_topics(caller: controller_pb2.ForwardedCaller, request: broker_pb2.CreateTopicsRequest) -> Answered[broker_pb2.CreateTopicsResponse]:
    """Create each topic as ``POST /topics`` would; -1 counts take the deployment's defaults."""
    topics = list(request.topics)
    names = [topic.name for topic in topics]
    results, succeeded = _for_each_entry(
        caller, names, lambda actor, index: _topic_result(_create_topic(actor, topics[index], request.validate_only)), _topic_failed(names)
    )
    _log("CreateTopics", caller, results, request.validate_only)
    return Answered(broker_pb2.CreateTopicsResponse(topics=results), succeeded and not request.validate_only)


def _create_topic(actor: Actor, creatable: broker_pb2.CreatableTopic, validate_only: bool) -> Topic:
    name = creatable.name
    problem = topic_name_problem(name, actor.tenant.public_id)
    if problem:
        raise TopicRequestError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    # Kafka answers an existing name before looking at counts and configs.
    if Topic.objects.filter(tenant=actor.tenant, name=name).exists():
        raise TopicRequestError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
    config_names = [entry.name for entry in creatable.configs]
    if _duplicates(config_names):
        raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"configs of topic {name!r} name {', '.join(sorted(_duplicates(config_names)))} more than once")
    partitions = default_num_partitions(actor.tenant) if creatable.num_partitions == USE_DEFAULT else creatable.num_partitions
    replication_factor = default_replication_factor() if creatable.replication_factor == USE_DEFAULT else creatable.replication_factor
    if partitions < 1:
        raise TopicRequestError(ErrorCode.INVALID_PARTITIONS, f"a topic has at least 1 partition, not {partitions} (-1 takes the default)")
    if replication_factor < 1:
        raise TopicRequestError(ErrorCode.INVALID_REPLICATION_FACTOR, f"the replication factor is at least 1, not {replication_factor} (-1 takes the default)")
    configs = {entry.name: entry.value for entry in creatable.configs}
    try:
        new_topic = check_create_topic(actor, name, partitions, replication_factor, configs)
    except ActionError as error:
        # Partition counts below 1 were refused above: a count error here is the plan's limit.
        raise _request_error(error, plan_fields={"partitions_count"}) from error
    try:
        with _rolled_back_if(validate_only):
            change = do_create_topic(actor, new_topic)
    except ActionError as error:
        # Here names and counts are valid: topic and partition totals are the plan's.
        raise _request_error(error, plan_fields={"topic_name", "partitions_count"}) from error
    return change.topic


# ---------------------------------------------------------------------------- DeleteTopics


def delete_topics(caller: controller_pb2.ForwardedCaller, request: broker_pb2.DeleteTopicsRequest) -> Answered[broker_pb2.DeleteTopicsResponse]:
    """Delete each topic as ``DELETE /topics/{name}`` would."""
    names = list(request.topics)

    def delete(actor: Actor, index: int) -> broker_pb2.TopicResult:
        topic = _tenant_topic(actor, names[index])
        try:
            do_delete_topic(actor, topic)
        except ActionError as error:
            raise _request_error(error) from error
        return _topic_result(topic)

    results, succeeded = _for_each_entry(caller, names, delete, _topic_failed(names))
    _log("DeleteTopics", caller, results, False)
    return Answered(broker_pb2.DeleteTopicsResponse(topics=results), succeeded)


# ---------------------------------------------------------------------------- CreatePartitions


def create_partitions(caller: controller_pb2.ForwardedCaller, request: broker_pb2.CreatePartitionsRequest) -> Answered[broker_pb2.CreatePartitionsResponse]:
    """Grow each topic to its new total count as ``POST /topics/{name}/partitions`` would."""
    entries = list(request.topics)
    names = [entry.name for entry in entries]
    results, succeeded = _for_each_entry(
        caller, names, lambda actor, index: _topic_result(_create_partitions(actor, entries[index], request.validate_only)), _topic_failed(names)
    )
    _log("CreatePartitions", caller, results, request.validate_only)
    return Answered(broker_pb2.CreatePartitionsResponse(topics=results), succeeded and not request.validate_only)


def _create_partitions(actor: Actor, entry: broker_pb2.CreatePartitionsTopic, validate_only: bool) -> Topic:
    topic = _tenant_topic(actor, entry.name)
    if entry.count <= topic.partition_count:
        raise TopicRequestError(
            ErrorCode.INVALID_PARTITIONS,
            f"topic {entry.name!r} has {topic.partition_count} partitions and the new count {entry.count} does not grow it (partitions can only be added)",
        )
    try:
        count = check_create_partitions(actor, topic, entry.count)
    except ActionError as error:
        raise _request_error(error, plan_fields={"partitions_count"}) from error
    try:
        with _rolled_back_if(validate_only):
            change = do_create_partitions(actor, topic, count)
    except ActionError as error:
        current = Topic.objects.filter(pk=topic.pk).values_list("partition_count", flat=True).first()
        # The count error of this step is either another request growing the topic meanwhile or the plan's total.
        plan_fields = () if current is not None and current >= count else ("partitions_count",)
        raise _request_error(error, plan_fields=plan_fields) from error
    return change.topic


# ---------------------------------------------------------------------------- AlterConfigs


def alter_configs(caller: controller_pb2.ForwardedCaller, request: broker_pb2.AlterConfigsRequest) -> Answered[broker_pb2.AlterConfigsResponse]:
    """Change each TOPIC resource's overrides as ``POST /topics/{name}/configs:alter`` would:
    incremental (SET / DELETE each key) or replacing every override (keys not named go back
    to their defaults). BROKER resources are refused: broker settings are static."""
    resources = list(request.resources)

    def alter(actor: Actor, index: int) -> broker_pb2.ConfigResourceResult:
        _alter_resource(actor, resources[index], request.validate_only)
        return broker_pb2.ConfigResourceResult(type=resources[index].type, name=resources[index].name)

    def failed(index: int, error: TopicRequestError) -> broker_pb2.ConfigResourceResult:
        resource = resources[index]
        return broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, error_code=error.code, error_message=error.message)

    results, succeeded = _for_each_entry(caller, [(resource.type, resource.name) for resource in resources], alter, failed)
    _log("AlterConfigs", caller, results, request.validate_only)
    return Answered(broker_pb2.AlterConfigsResponse(resources=results), succeeded and not request.validate_only)


def _alter_resource(actor: Actor, resource: broker_pb2.AlterConfigsResource, validate_only: bool) -> None:
    if resource.type == broker_pb2.RESOURCE_TYPE_BROKER:
        raise TopicRequestError(ErrorCode.INVALID_REQUEST, "broker settings cannot be changed at run time; they are set when a broker starts")
    if resource.type != broker_pb2.RESOURCE_TYPE_TOPIC:
        raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"resource type {resource.type} is not TOPIC (2) or BROKER (4)")
    config_names = [entry.name for entry in resource.configs]
    if _duplicates(config_names):
        raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"configs {', '.join(sorted(_duplicates(config_names)))} are named more than once")
    topic = _tenant_topic(actor, resource.name)
    deletes = [entry.name for entry in resource.configs if entry.op == broker_pb2.ALTER_CONFIG_OP_DELETE]
    if resource.incremental:
        operations = [
            (entry.name, ConfigOperation.DELETE, None) if entry.op == broker_pb2.ALTER_CONFIG_OP_DELETE else (entry.name, ConfigOperation.SET, entry.value)
            for entry in resource.configs
        ]
    else:
        if deletes:
            raise TopicRequestError(ErrorCode.INVALID_REQUEST, f"DELETE ({', '.join(deletes)}) is only valid in an incremental config change")
        # Replacing every override: the overrides not named return to their defaults.
        operations = [(name, ConfigOperation.DELETE, None) for name in sorted(topic.configs) if name not in set(config_names)]
        operations += [(entry.name, ConfigOperation.SET, entry.value) for entry in resource.configs]
    try:
        overrides = check_alter_topic_configs(actor, topic, operations)
        if not validate_only:
            do_alter_topic_configs(actor, topic, overrides)
    except ActionError as error:
        raise _request_error(error) from error


def _log(
    operation: str, caller: controller_pb2.ForwardedCaller, results: Sequence[broker_pb2.TopicResult | broker_pb2.ConfigResourceResult], validate_only: bool
) -> None:
    outcomes = ", ".join(f"{result.name}: {error_name(result.error_code)}" for result in results)
    logger.info(
        "forwarded %s%s from %s of %s (key %s): %s",
        operation,
        " (validate only)" if validate_only else "",
        caller.principal or "-",
        caller.tenant_id or "-",
        caller.api_key or "-",
        outcomes,
    )
