"""The controller: broker sessions, leader election from the ISR, ISR changes (data path 4).

``election`` and ``sessions`` are pure (no database, injected clock); ``actions`` applies their
decisions to the catalog in transactions; ``service`` ties them together and pushes the new
cluster map; ``servicer`` is the thin gRPC face; ``leadership`` keeps one controller active
and ``epoch`` fences a controller that was replaced; ``rebalance`` says when the periodic
preferred-leader election runs. ``registration`` records a broker joining the fleet and
``internal_topics`` keeps ``__consumer_offsets`` and ``__usage`` in the catalog.

It is its own app, above fleet, catalog and provisioning, because it drives all three: it
reads and changes brokers (fleet), partitions (catalog), and pushes snapshots (provisioning).
It holds no models; its management commands are ``run_controller``, ``elect_leaders`` and
``register_broker``.
"""
