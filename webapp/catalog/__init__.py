"""Desired state of each tenant's data plane: topics and their partitions, ACL bindings, quotas."""
