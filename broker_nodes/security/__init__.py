"""Broker security: who is calling (authentication), what they may do (ACLs), how fast (quotas), TLS.

The control plane pushes credentials, ACL bindings and quotas as versioned snapshots
(``snapshot``); each call is authenticated into a :class:`~broker_nodes.security.access.CallContext`
that the server passes to the broker's logic to map names into the caller's tenant and to
authorize each topic and group with Kafka's semantics (``authorizer``).
"""
