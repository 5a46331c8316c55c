"""What other apps may use of catalog: the desired state of topics, partitions, ACL bindings
and quotas, the actions that change it (``check_*``/``do_*``, each recording its provisioning
job through ``webapp.common.changes``), partition health, topic configs and topic names.

Catalog sits above accounts and fleet and below provisioning (docs/architecture.md, "Apps and
their facades"). ``place_partitions`` creates the Partition rows of new partitions over the
fleet's brokers. The model classes are handed out because provisioning builds the brokers'
snapshots from them and the front doors list and render them.
"""

from __future__ import annotations

from webapp.catalog.acl_explainer import (
    AccessQuestion,
    Explanation,
    check_access_question,
    cluster_admin_explanation,
    describe_binding,
    explain_access,
    explain_with,
)
from webapp.catalog.acl_filters import AclFilter, apply_acl_filter
from webapp.catalog.actions.acl_templates import TEMPLATES as ACL_TEMPLATES
from webapp.catalog.actions.acl_templates import TemplateResult, check_acl_template, do_apply_acl_template
from webapp.catalog.actions.acls import check_create_acl, do_create_acl, do_delete_acls
from webapp.catalog.actions.quotas import check_set_quota, do_set_quota, tenant_quota
from webapp.catalog.actions.topics import (
    ConfigOperation,
    check_alter_topic_configs,
    check_create_partitions,
    check_create_topic,
    do_alter_topic_configs,
    do_create_partitions,
    do_create_topic,
    do_delete_topic,
)
from webapp.catalog.models import CLUSTER_RESOURCE_NAME, AclBinding, Operation, Partition, PatternType, Permission, Quota, ResourceType, Topic
from webapp.catalog.partition_health import (
    BrokerPartitionCounts,
    HealthCounts,
    PartitionHealth,
    broker_partition_counts,
    health_counts_by_topic,
    min_insync_replicas,
    partition_health,
    replica_states,
    tenant_health_counts,
    topic_health_counts,
    topic_partition_health,
    topic_row_with_health_counts,
)
from webapp.catalog.placement_rows import place_partitions
from webapp.catalog.topic_configs import TopicConfigEntry, describe_topic_configs
from webapp.catalog.topic_names import TENANT_TOPIC_NAME_MAX_LENGTH, topic_name_length_help, topic_name_problem

__all__ = [
    "ACL_TEMPLATES",
    "AccessQuestion",
    "AclBinding",
    "Explanation",
    "TemplateResult",
    "check_access_question",
    "check_acl_template",
    "cluster_admin_explanation",
    "describe_binding",
    "do_apply_acl_template",
    "explain_access",
    "explain_with",
    "AclFilter",
    "BrokerPartitionCounts",
    "CLUSTER_RESOURCE_NAME",
    "ConfigOperation",
    "HealthCounts",
    "Operation",
    "Partition",
    "PartitionHealth",
    "PatternType",
    "Permission",
    "Quota",
    "ResourceType",
    "TENANT_TOPIC_NAME_MAX_LENGTH",
    "Topic",
    "TopicConfigEntry",
    "apply_acl_filter",
    "broker_partition_counts",
    "check_alter_topic_configs",
    "check_create_acl",
    "check_create_partitions",
    "check_create_topic",
    "check_set_quota",
    "describe_topic_configs",
    "do_alter_topic_configs",
    "do_create_acl",
    "do_create_partitions",
    "do_create_topic",
    "do_delete_acls",
    "do_delete_topic",
    "do_set_quota",
    "health_counts_by_topic",
    "min_insync_replicas",
    "partition_health",
    "place_partitions",
    "replica_states",
    "tenant_health_counts",
    "tenant_quota",
    "topic_health_counts",
    "topic_name_length_help",
    "topic_name_problem",
    "topic_partition_health",
    "topic_row_with_health_counts",
]
