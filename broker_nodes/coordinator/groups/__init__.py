"""Consumer groups with KIP-848's protocol: the coordinator keeps each group's members, epochs and assignment.

- ``assignors``: range, round robin and sticky (Kafka's uniform) target assignments, pure.
- ``member`` / ``reconciliation``: one member's state and its move towards its target
  (revoke before assign, so no partition ever has two owners).
- ``group``: one group's state machine (heartbeat, leave, timeouts, states, commit checks),
  pure over an injected time.
- ``records``: the group records in ``__consumer_offsets`` (Kafka's key versions 3..8).
- ``loaded_groups``: the groups of one led offsets partition, rebuilt from its log.
- ``subscriptions``: a member's topics, resolved against its tenant's topics and ACLs.
- ``coordinator``: every group this broker coordinates; persistence and timers.
- ``messages``: the ConsumerGroup* protobuf messages to and from the coordinator's values.
- ``errors``: typed errors, mapped to Kafka's codes by ``server.errors``.
"""
