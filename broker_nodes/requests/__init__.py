"""Transport-neutral request logic: what the gRPC servicer and the Kafka-protocol handlers both call.

The line between the transports and this package: a front door decodes its wire message into
plain Python values (names as the tenant knows them), calls one function here with the
caller's :class:`~broker_nodes.security.access.CallContext`, and encodes the neutral result
into its wire response. Everything that must behave the same whichever door a client uses
lives here or below: authorization with the tenant's ACLs, tenant name mapping
(``call.qualify`` / ``call.plain`` / ``call.owns``), byte-rate quotas, usage metering, the
purgatory waits (long-poll fetch, acks=all) and error mapping (typed errors become Kafka's
numeric codes and messages with plain names, via ``broker_nodes.server.errors``).

Nothing here sleeps for a throttle: results carry ``throttle_ms`` and each transport applies it
its own way (the gRPC servicer delays its response; the Kafka connection sends
``throttle_time_ms`` and mutes its socket, KIP-219).
"""
