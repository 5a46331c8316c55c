"""Throughput and latency benchmarks of Weir, side by side with Redis Streams and NATS JetStream.

Run ``python -m bench {produce,consume,e2e,all}``; ``python -m bench --help`` lists the options.
The package imports only the Weir SDK (``weir``) and libraries: it starts its own broker as a
subprocess, exactly as an operator would, so that it measures what a user of the SDK sees.
"""
