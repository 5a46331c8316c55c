"""The transaction coordinator (issue 15): ``__transaction_state``, Kafka's state machine with KIP-890's epochs, markers.

- ``state``: the pure state machine of one transactional id.
- ``partition``: one led ``__transaction_state`` partition in memory.
- ``coordinator``: leadership, loading, persistence (acks=all), markers, timeouts, expiry.
- ``markers``: the interface the coordinator writes markers through.
- ``errors``: typed errors, mapped to Kafka's codes in ``server.errors``.
"""
