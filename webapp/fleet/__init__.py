"""Broker nodes of the cluster and the placement of partitions on them."""
