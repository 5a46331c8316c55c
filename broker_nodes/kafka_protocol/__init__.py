"""Kafka's wire protocol as a second front door of every broker (issue 14).

``api`` is the handler registry and request context, ``framing`` the frame and header codec,
``connection`` one client connection, ``server`` the listener, ``sasl`` the SASL mechanisms,
``handlers`` one module per API family over the transport-neutral ``broker_nodes.requests``.
"""
