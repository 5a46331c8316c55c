"""Every Kafka API handler module; importing this package registers them all with ``api``.

ApiVersions answers exactly what is registered, so a module not imported here is not served.
Add one import line per handler module.
"""

from broker_nodes.kafka_protocol.handlers import add_offsets_to_txn as add_offsets_to_txn
from broker_nodes.kafka_protocol.handlers import add_partitions_to_txn as add_partitions_to_txn
from broker_nodes.kafka_protocol.handlers import alter_configs as alter_configs
from broker_nodes.kafka_protocol.handlers import api_versions as api_versions
from broker_nodes.kafka_protocol.handlers import classic_groups as classic_groups
from broker_nodes.kafka_protocol.handlers import consumer_groups as consumer_groups
from broker_nodes.kafka_protocol.handlers import create_acls as create_acls
from broker_nodes.kafka_protocol.handlers import create_partitions as create_partitions
from broker_nodes.kafka_protocol.handlers import create_topics as create_topics
from broker_nodes.kafka_protocol.handlers import delete_acls as delete_acls
from broker_nodes.kafka_protocol.handlers import delete_records as delete_records
from broker_nodes.kafka_protocol.handlers import delete_topics as delete_topics
from broker_nodes.kafka_protocol.handlers import describe_acls as describe_acls
from broker_nodes.kafka_protocol.handlers import describe_cluster as describe_cluster
from broker_nodes.kafka_protocol.handlers import describe_configs as describe_configs
from broker_nodes.kafka_protocol.handlers import describe_producers as describe_producers
from broker_nodes.kafka_protocol.handlers import describe_transactions as describe_transactions
from broker_nodes.kafka_protocol.handlers import elect_leaders as elect_leaders
from broker_nodes.kafka_protocol.handlers import end_txn as end_txn
from broker_nodes.kafka_protocol.handlers import fetch as fetch
from broker_nodes.kafka_protocol.handlers import find_coordinator as find_coordinator
from broker_nodes.kafka_protocol.handlers import group_admin as group_admin
from broker_nodes.kafka_protocol.handlers import incremental_alter_configs as incremental_alter_configs
from broker_nodes.kafka_protocol.handlers import init_producer_id as init_producer_id
from broker_nodes.kafka_protocol.handlers import list_offsets as list_offsets
from broker_nodes.kafka_protocol.handlers import list_transactions as list_transactions
from broker_nodes.kafka_protocol.handlers import metadata as metadata
from broker_nodes.kafka_protocol.handlers import offset_commit as offset_commit
from broker_nodes.kafka_protocol.handlers import offset_delete as offset_delete
from broker_nodes.kafka_protocol.handlers import offset_fetch as offset_fetch
from broker_nodes.kafka_protocol.handlers import offset_for_leader_epoch as offset_for_leader_epoch
from broker_nodes.kafka_protocol.handlers import produce as produce
from broker_nodes.kafka_protocol.handlers import sasl as sasl
from broker_nodes.kafka_protocol.handlers import txn_offset_commit as txn_offset_commit
from broker_nodes.kafka_protocol.handlers import user_scram_credentials as user_scram_credentials
from broker_nodes.kafka_protocol.handlers import write_txn_markers as write_txn_markers
